#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages with deploy/debs.sh (dpkg-buildpackage, then lintian:
# no error or warning) into BUILD_DIR/debs, and checks them with dpkg-deb:
#   1. the five packages, each at the project's version (python3-brooq: Architecture all);
#   2. each package's files, exactly (dpkg-deb -c);
#   3. control fields (dpkg-deb -I): dependencies from ${shlibs:Depends}, the -dev
#      package and python3-brooq pinned to the library and the gateway to brooqctl,
#      python3-brooq byte-compiled at install (dh_python3), the settings file a
#      conffile, maintainer scripts that run systemd-sysusers and never enable or
#      start the unit, and restart it on upgrade only after a schema check;
#   4. the unit starts the packaged program and reads the packaged settings file,
#      which is the short deploy/brooq-gateway.env (the settings are in the man page),
#      and loads the credentials the source's unit loads;
#   5. the -dev package alone documents the library: brooq(3) names the protocol and
#      the example worker at their places in that package.
# deb_run_test.sh then unpacks and runs them (ctest fixture "debs").
# Usage: deb_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: deb_test.sh BUILD_DIR}" && pwd)
src=${BROOQ_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d /tmp/brooq-deb-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/support/check.sh
. "$src/tests/support/check.sh"

version=$(sed -n 's/^#define BROOQ_VERSION *"\(.*\)"/\1/p' "$build/common/brq_version.h")
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
out=$build/debs
deb() { # deb PACKAGE: its .deb (python3-brooq is pure Python: Architecture all)
  if [ "$1" = python3-brooq ]; then echo "$out/${1}_${version}_all.deb"; else echo "$out/${1}_${version}_${arch}.deb"; fi
}

# ---- build (and lintian) ----------------------------------------------------------------
start=$(date +%s)
check "deploy/debs.sh builds the packages and lintian passes them" \
  env BROOQ_DEBS_NO_DEPS="${BROOQ_DEBS_NO_DEPS:-1}" "$src/deploy/debs.sh" "$out"
echo "     (build and lintian: $(($(date +%s) - start)) s)"
sed -n '/^== lintian/,$p' "$tmp/check.out" | sed 's/^/     /'

# ---- 1. packages and version ------------------------------------------------------------------
check "debian/changelog's version is the project's ($version)" \
  bash -c '[ "$(dpkg-parsechangelog -l "$1/debian/changelog" -S Version)" = "$2" ]' _ "$src" "$version"
for p in brooq-gateway brooqctl libbrooq-client1 libbrooq-client-dev python3-brooq; do
  check "$p: built, version $version" \
    bash -c '[ "$(dpkg-deb -f "$1" Package Version | tr "\n" " ")" = "Package: $2 Version: $3 " ]' \
    _ "$(deb $p)" "$p" "$version"
done

# ---- 2. contents ---------------------------------------------------------------------------
contents() { # contents PACKAGE: its files and links, sorted, without ./
  dpkg-deb -c "$(deb "$1")" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./||' | LC_ALL=C sort
}
same_contents() { # same_contents PACKAGE < expected list
  LC_ALL=C sort >"$tmp/$1.expected"
  contents "$1" >"$tmp/$1.actual"
  same_lines "$tmp/$1.expected" "$tmp/$1.actual"
}
migrations=$(cd "$src/migrations" && ls | sed 's|^|usr/share/brooq/migrations/|')
check "brooq-gateway: program, unit, sysusers.d, conffile, docs, man page" same_contents brooq-gateway <<LIST
etc/brooq/brooq-gateway.env
lib/systemd/system/brooq-gateway.service
usr/bin/brooq-gateway
usr/lib/sysusers.d/brooq.conf
usr/share/doc/brooq/README.md
usr/share/doc/brooq/brooq-gateway.env.example
usr/share/doc/brooq/brooqctl.md
usr/share/doc/brooq/console.md
usr/share/doc/brooq/examples/brooq-dashboard.json
usr/share/doc/brooq/examples/brooq-rules.yml
usr/share/doc/brooq/operations.md
usr/share/doc/brooq/protocol.md
usr/share/doc/brooq/security.md
usr/share/doc/brooq-gateway/changelog.gz
usr/share/doc/brooq-gateway/copyright
usr/share/lintian/overrides/brooq-gateway
usr/share/man/man8/brooq-gateway.8.gz
LIST
check "brooqctl: program, migrations, man page" same_contents brooqctl <<LIST
usr/bin/brooqctl
$migrations
usr/share/doc/brooqctl/changelog.gz
usr/share/doc/brooqctl/copyright
usr/share/man/man1/brooqctl.1.gz
LIST
check "libbrooq-client1: the shared library alone" same_contents libbrooq-client1 <<LIST
usr/lib/$ma/libbrooq-client.so.1
usr/lib/$ma/libbrooq-client.so.$version
usr/share/doc/libbrooq-client1/changelog.gz
usr/share/doc/libbrooq-client1/copyright
LIST
check "libbrooq-client-dev: header, .so link, static library, .pc, CMake package, brooq(3), protocol, example" \
  same_contents libbrooq-client-dev <<LIST
usr/include/brooq/brooq.h
usr/lib/$ma/cmake/brooq-client/brooq-clientConfig.cmake
usr/lib/$ma/cmake/brooq-client/brooq-clientConfigVersion.cmake
usr/lib/$ma/cmake/brooq-client/brooq-clientTargets-none.cmake
usr/lib/$ma/cmake/brooq-client/brooq-clientTargets.cmake
usr/lib/$ma/libbrooq-client.a
usr/lib/$ma/libbrooq-client.so
usr/lib/$ma/pkgconfig/brooq-client.pc
usr/share/doc/libbrooq-client-dev/changelog.gz
usr/share/doc/libbrooq-client-dev/copyright
usr/share/doc/libbrooq-client-dev/examples/worker.c
usr/share/doc/libbrooq-client-dev/protocol.md
usr/share/man/man3/brooq.3.gz
LIST
# The module's files as client/python has them, and the metadata of its build backend.
pyfiles=$(cd "$src/client/python" && ls brooq/*.py brooq/py.typed | sed 's|^|usr/lib/python3/dist-packages/|')
pyversion=$(sed -n 's/^VERSION = "\(.*\)"$/\1/p' "$src/client/python/_build/brooq_build.py")
check "python3-brooq: the brooq module (client/python/brooq) and its dist-info" same_contents python3-brooq <<LIST
$pyfiles
usr/lib/python3/dist-packages/brooq-$pyversion.dist-info/METADATA
usr/lib/python3/dist-packages/brooq-$pyversion.dist-info/WHEEL
usr/share/doc/python3-brooq/changelog.gz
usr/share/doc/python3-brooq/copyright
LIST
check "the .so links point at the soname and the library" bash -c '
  dpkg-deb -c "$1" | grep -F "libbrooq-client.so.1 -> libbrooq-client.so.$3" &&
  dpkg-deb -c "$2" | grep -F "libbrooq-client.so -> libbrooq-client.so.1"' \
  _ "$(deb libbrooq-client1)" "$(deb libbrooq-client-dev)" "$version"
check "the settings file is 0644 root:root, the programs 0755" bash -c '
  dpkg-deb -c "$1" | grep -E "^-rw-r--r-- root/root .* \./etc/brooq/brooq-gateway.env$" &&
  dpkg-deb -c "$1" | grep -E "^-rwxr-xr-x root/root .* \./usr/bin/brooq-gateway$" &&
  dpkg-deb -c "$2" | grep -E "^-rwxr-xr-x root/root .* \./usr/bin/brooqctl$"' \
  _ "$(deb brooq-gateway)" "$(deb brooqctl)"

# ---- 3. control fields and maintainer scripts ---------------------------------------------------
field() { dpkg-deb -f "$(deb "$1")" "$2"; }
check "brooq-gateway depends on the libraries it links (shlibs) and on systemd-sysusers" bash -c '
  d=$(dpkg-deb -f "$1" Depends); echo "$d"
  for want in "libc6 (" "libpq5" "libsodium23" "systemd | systemd-standalone-sysusers"; do
    case $d in *"$want"*) ;; *) echo "missing: $want"; exit 1 ;; esac
  done
  for lib in $(objdump -p "$2" | sed -n "s/^ *NEEDED *//p"); do echo "NEEDED $lib"; done' \
  _ "$(deb brooq-gateway)" "$build/bin/brooq-gateway"
check "brooq-gateway depends on brooqctl of its own version (the migrations it needs)" bash -c '
  dpkg-deb -f "$1" Depends | tr "," "\n" | grep -Fx " brooqctl (= $2)"' _ "$(deb brooq-gateway)" "$version"
check "brooqctl depends on what it links, not on libbrooq-client1 (static)" bash -c '
  d=$(dpkg-deb -f "$1" Depends); echo "$d"
  case $d in *libpq5*) ;; *) exit 1 ;; esac
  case $d in *libbrooq*) exit 1 ;; esac' _ "$(deb brooqctl)"
check "libbrooq-client-dev depends on its library at the same version" \
  bash -c 'dpkg-deb -f "$1" Depends | grep -F "libbrooq-client1 (= $2)"' _ "$(deb libbrooq-client-dev)" "$version"
# The library's package is named for its soname (libbrooq-clientN): python3-brooq depends
# on it, whatever N, at this source version, beside Python 3 (dh_python3) and cffi.
check "python3-brooq: Architecture all, Section python; depends on python3, python3-cffi, the library of its version" bash -c '
  d=$(dpkg-deb -f "$1" Depends); echo "$d"
  [ "$(dpkg-deb -f "$1" Architecture)" = all ] && [ "$(dpkg-deb -f "$1" Section)" = python ] &&
  tr "," "\n" <<<"$d" | grep -Ex " ?python3:any" && tr "," "\n" <<<"$d" | grep -Ex " ?python3-cffi" &&
  tr "," "\n" <<<"$d" | grep -Ex " ?libbrooq-client[0-9]+ \(= $2\)" &&
  [ "$(tr "," "\n" <<<"$d" | grep -Ex " ?libbrooq-client[0-9]+ \(= $2\)" | sed "s/^ //; s/ .*//")" = \
    "$(dpkg-deb -f "$3" Package)" ]' _ "$(deb python3-brooq)" "$version" "$(deb libbrooq-client1)"
check "python3-brooq: byte-compiled at install, cleaned at removal (dh_python3)" bash -c '
  dpkg-deb -I "$1" postinst | grep -q "py3compile -p python3-brooq" &&
  dpkg-deb -I "$1" prerm | grep -q "py3clean -p python3-brooq"' _ "$(deb python3-brooq)"
check "libbrooq-client1: Section libs, Multi-Arch same, shlibs and symbols files" bash -c '
  [ "$(dpkg-deb -f "$1" Section)" = libs ] && [ "$(dpkg-deb -f "$1" Multi-Arch)" = same ] &&
  dpkg-deb -I "$1" shlibs | grep -Fx "libbrooq-client 1 libbrooq-client1 (>= $2)" &&
  [ "$(dpkg-deb -I "$1" symbols | grep -c "^ brooq_.*@Base")" -eq "$(grep -c "BROOQ_API.*brooq_[a-z_]*(" "$3")" ]' \
  _ "$(deb libbrooq-client1)" "$version" "$src/client/include/brooq/brooq.h"
check "/etc/brooq/brooq-gateway.env is a conffile" \
  bash -c '[ "$(dpkg-deb -I "$1" conffiles)" = /etc/brooq/brooq-gateway.env ]' _ "$(deb brooq-gateway)"
scripts() { # scripts PACKAGE: its maintainer scripts, concatenated
  local s
  for s in preinst postinst prerm postrm; do dpkg-deb -I "$(deb "$1")" "$s" 2>/dev/null || true; done
}
scripts brooq-gateway >"$tmp/scripts"
check "postinst runs systemd-sysusers for brooq.conf" \
  bash -c 'dpkg-deb -I "$1" postinst | grep -E "^ *systemd-sysusers .*brooq\.conf$"' _ "$(deb brooq-gateway)"
# (deb_run_test.sh installs into a scratch root and checks the outcome too.)
# (echo lines are messages: the postinst tells the operator to run systemctl restart.)
check "no maintainer script starts the unit; postinst re-enables only an enabled one" bash -c '
  ! grep -vE "^\s*echo " "$1" | grep -nE "deb-systemd-invoke (start|restart) |systemctl (start|enable|restart)" &&
  grep -q "if deb-systemd-helper debian-installed .brooq-gateway.service.; then" "$1" &&
  ! grep -q "was-enabled defaults to true" "$1"' _ "$tmp/scripts"
# (deb_run_test.sh runs the postinst's decision against a database.)
# The one stop is the prerm's on removal: nothing stops the gateway for an upgrade.
check "an upgrade restarts the gateway only if it runs, after a schema check; removal stops it" bash -c '
  [ "$(grep -cE "deb-systemd-invoke try-restart .?brooq-gateway.service" "$1")" -eq 1 ] &&
  grep -q "brooqctl migrate status" "$1" &&
  dpkg-deb -I "$2" prerm | grep -q "deb-systemd-invoke stop brooq-gateway.service" &&
  [ "$(grep -c "deb-systemd-invoke stop" "$1")" -eq 1 ]' \
  _ "$tmp/scripts" "$(deb brooq-gateway)"

# ---- 4. the packaged unit --------------------------------------------------------------------
dpkg-deb --fsys-tarfile "$(deb brooq-gateway)" | tar -xO ./lib/systemd/system/brooq-gateway.service >"$tmp/unit"
check "the unit starts /usr/bin/brooq-gateway" grep -E '^ExecStart=[-@+!:]*/usr/bin/brooq-gateway( |$)' "$tmp/unit"
check "the unit reads the packaged settings file" \
  grep -E '^(EnvironmentFile=-?|ExecStart=.*--env-file[ =])/etc/brooq/brooq-gateway\.env' "$tmp/unit"
check "the unit's Documentation= files are in the package" bash -c '
  n=0
  for d in $(sed -n "s/^Documentation=//p" "$1"); do
    case $d in
      file://*) f=.${d#file://} ;;
      man:*) f=$(echo "${d#man:}" | sed "s|^\(.*\)(\([0-9]\))$|./usr/share/man/man\2/\1.\2.gz|") ;;
      *) continue ;;
    esac
    dpkg-deb -c "$2" | grep -qE " ${f//./\\.}$" || { echo "$d is not in the package"; exit 1; }
    n=$((n + 1))
  done
  [ $n -gt 0 ]' _ "$tmp/unit" "$(deb brooq-gateway)"

check "the settings file is the short deploy/brooq-gateway.env, which sends to brooq-gateway(8)" bash -c '
  dpkg-deb --fsys-tarfile "$1" | tar -xO ./etc/brooq/brooq-gateway.env >"$3/conffile"
  cmp "$2" "$3/conffile" && [ "$(wc -c <"$3/conffile")" -lt 1024 ] && grep -q "man 8 brooq-gateway" "$3/conffile"' \
  _ "$(deb brooq-gateway)" "$src/deploy/brooq-gateway.env" "$tmp"
check "the packaged unit loads the credentials the source's unit loads" bash -c '
  diff <(grep "^LoadCredential=" "$2") <(grep "^LoadCredential=" "$1") && grep -q "^LoadCredential=" "$1"' \
  _ "$tmp/unit" "$src/deploy/systemd/brooq-gateway.service"

# ---- 5. the -dev package's documents ------------------------------------------------------------
dev_docs() {
  local page list n=0 f
  list=$(dpkg-deb -c "$(deb libbrooq-client-dev)")
  # The page's roff source, without scdoc's \& (and \- in case): paths are whole there.
  page=$(dpkg-deb --fsys-tarfile "$(deb libbrooq-client-dev)" | tar -xO ./usr/share/man/man3/brooq.3.gz |
    zcat | sed -e 's/\\&//g' -e 's/\\-/-/g')
  for f in $(grep -o '/usr/share/doc/[A-Za-z0-9./_-]*' <<<"$page" | sed 's/[.]$//' | sort -u); do
    grep -qE " \.${f//./\\.}$" <<<"$list" || { echo "brooq(3) names $f, not in libbrooq-client-dev"; return 1; }
    echo "brooq(3) names $f"
    n=$((n + 1))
  done
  [ $n -ge 2 ]
}
check "brooq(3) names the protocol and the example worker, both in libbrooq-client-dev" dev_docs

check_done
