#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ABI check of libbrooq-client (docs/abi.md): the built shared library against the
# committed baseline of its soname (client/abi/libbrooq-client.so.N.abi, written by
# abidw), compared by abidiff. Allowed: added functions, and a struct that only grew at
# its end (data members inserted at or past its old size, nothing else of it changed),
# except the frozen brooq_lease and brooq_log_field. Any other change fails. (Read off
# abidiff's leaf report here: libabigail's own has_data_member_inserted_at suppression
# also hides a member whose type changed.) Then a planted self-test: stub libraries
# built from patched copies of brooq.h must fail the same check for an incompatible
# change and pass it for an allowed one.
#   abi_test.sh BUILD_DIR SOURCE_DIR C_COMPILER
set -euo pipefail
build=$1 src=$2 cc=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
for t in abidw abidiff; do
  command -v "$t" >/dev/null || fail "$t is missing: deploy/deps.sh installs abigail-tools"
done
tmp=$(mktemp -d /tmp/brooq-abi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
hdr=$src/client/include/brooq/brooq.h

# The ABI of a shared library as abixml: public types only, no paths or line numbers.
abi_of() { # abi_of LIB HEADERS_DIR OUT
  abidw --no-corpus-path --no-show-locs --headers-dir "$2" --drop-private-types --drop-undefined-syms \
    --no-elf-needed "$1" >"$3"
}
# abi_check OLD NEW: 0 when NEW keeps OLD's ABI (within the allowed changes), else 1
# with abidiff's report on stderr.
abi_check() {
  local rc=0
  abidiff --no-added-syms --leaf-changes-only --no-show-locs "$1" "$2" >"$tmp/report" 2>&1 || rc=$?
  if [ $((rc & 3)) -ne 0 ]; then
    cat "$tmp/report" >&2
    fail "abidiff could not compare $1 and $2 (exit $rc)"
  fi
  [ "$rc" -eq 0 ] && return 0
  if ! python3 - "$tmp/report" <<'EOF'
import re, sys
frozen = {"brooq_lease", "brooq_log_field"}
bad, name, old = [], None, None
for line in open(sys.argv[1]).read().splitlines():
    t = line.strip()
    if not t:
        continue
    m = re.match(r"Removed/Changed/Added (functions|variables) summary: (\d+) Removed, (\d+) Changed", t)
    if m:
        if m.group(2) != "0" or m.group(3) != "0":
            bad.append(t)
        continue
    if re.match(r"(Leaf changes|Changed leaf types|Removed/Changed/Added) .*summary", t):
        continue
    m = re.match(r"'struct (\w+)' changed:$", t)
    if m:
        name, old = m.group(1), None
        if name in frozen:
            bad.append(name + " is frozen")
        continue
    m = re.match(r"type size changed from (\d+) to (\d+) \(in bits\)$", t)
    if m and name and int(m.group(2)) > int(m.group(1)):
        old = int(m.group(1))
        continue
    if name and re.match(r"\d+ data member insertions?:$", t):
        continue
    m = re.match(r"'.*', at offset (\d+) \(in bits\)$", t)
    if m and name and old is not None and int(m.group(1)) >= old:
        continue
    bad.append(t)
for b in bad:
    print("incompatible: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
  then
    cat "$tmp/report" >&2
    return 1
  fi
  return 0
}

# ---- the library against its baseline ----------------------------------------------------
so=$(readlink -f "$build/client/libbrooq-client.so")
soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
base=$src/client/abi/$soname.abi
[ -f "$base" ] || fail "no baseline $base for $soname: a new soname needs one (docs/abi.md, \"Updating the baseline\")"
abi_of "$so" "$src/client/include/brooq" "$tmp/built.abi"
abi_check "$base" "$tmp/built.abi" || fail "$soname breaks the ABI of its baseline $(basename "$base") (report above)"
echo "ok: $soname keeps the ABI of client/abi/$(basename "$base")"

# ---- self-test: planted changes ----------------------------------------------------------
# A stub library exporting every function of a (patched) brooq.h, bodies aborting: its
# debug information carries the header's types as the real library's does.
stub() { # stub NAME HEADER
  mkdir -p "$tmp/$1/brooq"
  cp "$2" "$tmp/$1/brooq/brooq.h"
  python3 - "$tmp/$1/brooq/brooq.h" >"$tmp/$1/stub.c" <<'EOF'
import re, sys
h = open(sys.argv[1]).read()
print('#define BROOQ_BUILDING 1\n#include "brooq/brooq.h"\n#include <stdlib.h>')
for m in re.finditer(r'BROOQ_API\s+([^;{]*?\))\s*;', h, re.S):
    print(m.group(1) + ' { abort(); }')
EOF
  "$cc" -g -O0 -shared -fPIC -fvisibility=hidden -I"$tmp/$1" -o "$tmp/$1/lib.so" "$tmp/$1/stub.c"
  abi_of "$tmp/$1/lib.so" "$tmp/$1/brooq" "$tmp/$1.abi"
}
# patched NAME PYTHON_EXPR: brooq.h with h replaced by the expression's value.
patched() {
  python3 -c "import sys; h = open(sys.argv[1]).read(); o = $2; assert o != h, 'the patch changed nothing'; sys.stdout.write(o)" \
    "$hdr" >"$tmp/$1.h" || fail "planting $1"
  stub "$1" "$tmp/$1.h"
}
expect() { # expect pass|fail NAME WHAT
  if abi_check "$tmp/orig.abi" "$tmp/$2.abi" 2>"$tmp/$2.report"; then got=pass; else got=fail; fi
  if [ "$got" != "$1" ]; then
    cat "$tmp/$2.report" >&2
    fail "self-test: $3: the check said $got, want $1"
  fi
  echo "ok: self-test: $3: the check says $1"
}
stub orig "$hdr"
patched job_middle "h.replace('\tuint32_t    attempts; /* including this claim */', '\tuint32_t    planted;\n\tuint32_t    attempts; /* including this claim */')"
expect fail job_middle "a field inserted in the middle of brooq_job"
patched spec_type "h.replace('\tuint32_t    max_attempts; /* 0: the gateway', '\tuint64_t    max_attempts; /* 0: the gateway')"
expect fail spec_type "a field of brooq_job_spec changes type"
patched lease_end "h.replace('\tuint8_t  token[BROOQ_LEASE_LEN];\n} brooq_lease;', '\tuint8_t  token[BROOQ_LEASE_LEN];\n\tuint32_t planted;\n} brooq_lease;')"
expect fail lease_end "a field appended to brooq_lease (frozen)"
patched removed "h.replace('BROOQ_API void      brooq_topics_free(brooq_topic_policy **p, size_t n);', '')"
expect fail removed "a function removed"
patched spec_end "h.replace('\tuint32_t priority;\n} brooq_job_spec;', '\tuint32_t priority;\n\tuint64_t planted;\n} brooq_job_spec;')"
expect pass spec_end "a field appended to brooq_job_spec (size-versioned)"
patched job_end "h.replace('\tuint64_t max_execution_ms;\n} brooq_job;', '\tuint64_t max_execution_ms;\n\tuint64_t planted;\n} brooq_job;')"
expect pass job_end "a field appended to brooq_job (library-allocated)"
patched new_fn "h.replace('#ifdef __cplusplus\n}', 'BROOQ_API int brooq_planted(brooq_client *c);\n\n#ifdef __cplusplus\n}')"
expect pass new_fn "a function added"
