#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/layout_test.sh must fail on each kind of violation it checks: a copy of the
# product code with one of each planted in it must fail, naming every one; the copy
# as it is must pass.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in gateway proto client common; do cp -r "$root/$d" "$tmp/$d"; done
"$root/tests/layout_test.sh" "$tmp" >/dev/null || { echo "selftest: the clean copy fails"; exit 1; }

# libpq outside the store, msgpack outside proto, the client including a gateway header,
# a function of 90 lines, a file of 900 lines, an include loop, a module's private header.
printf '\nstatic void planted_pq(void) { PQclear(NULL); }\n' >>"$tmp/gateway/rpc/ops.c"
printf '\nstatic void planted_mp(void) { msgpack_sbuffer_init(0); }\n' >>"$tmp/client/lib/rpc.c"
printf '#include "waiters.h"\n' >>"$tmp/client/lib/rpc.c"
{ printf '\nstatic void\nplanted_long(void)\n{\n'; for i in $(seq 1 88); do printf '\t(void) %d;\n' "$i"; done; printf '}\n'; } >>"$tmp/proto/text.c"
for i in $(seq 1 900); do printf '// %d\n' "$i"; done >>"$tmp/common/brq_grow.h"
printf '#include "planted_b.h"\n' >"$tmp/proto/planted_a.h"
printf '#include "planted_a.h"\n' >"$tmp/proto/planted_b.h"
# a module's private header included from another folder, by path and by bare name
printf '#include "store/store_int.h"\n' >>"$tmp/gateway/console/console.c"
printf '#include "waiters.h"\n' >>"$tmp/gateway/http.c"

out=$("$root/tests/layout_test.sh" "$tmp" || true)
fail=0
for want in "gateway/rpc/ops.c: uses libpq" "client/lib/rpc.c: uses msgpack" \
  "client/lib/rpc.c: includes waiters.h" "proto/text.c: planted_long is 90 lines" \
  "common/brq_grow.h: 9" "proto: include loop planted_a.h -> planted_b.h -> planted_a.h" \
  "gateway/console/console.c: includes store/store_int.h, private to gateway/store/" \
  "gateway/http.c: includes waiters.h of gateway/rpc/ by its bare name"; do
  if ! grep -qF "$want" <<<"$out"; then
    echo "selftest: not reported: $want"
    fail=1
  fi
done
[ "$fail" = 0 ] || { echo "$out"; exit 1; }
echo "layout selftest: every planted violation reported"
