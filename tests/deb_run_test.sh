#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the packages deb_test.sh built (BUILD_DIR/debs; ctest fixture "debs"):
#   1. unpacked with dpkg -x into a throwaway root: brooqctl --version, and
#      brooq-gateway --check-config with the packaged settings file and a DSN and
#      tokens in that root (as files named in the settings, as the unit's credentials
#      directory laid out as README says, and as systemd copies credentials); the
#      packaged settings alone are refused as unconfigured;
#   2. the unpacked brooqctl reads the unpacked migrations and migrates a fresh
#      database without --dir;
#   3. a program builds against the unpacked -dev package (pkg-config and CMake)
#      and runs on the unpacked shared library; the unpacked python3-brooq imports
#      and finds that library by its soname, as an installed one does;
#   4. installed with dpkg --root into another throwaway root, maintainer scripts
#      and all: the brooq group exists, the unit is not enabled, the settings file
#      is a registered conffile; reinstalling works; purging removes it all;
#   5. the upgrade's postinst, with systemd's commands stubbed: it restarts a running
#      gateway only when the database has every migration (the unpacked gateway exits
#      78 on one a migration old), else leaves it running and prints what to run.
# Usage: deb_run_test.sh BUILD_DIR   (the harness PostgreSQL: $BROOQ_TEST_PGHOST)
set -euo pipefail
build=$(cd "${1:?usage: deb_run_test.sh BUILD_DIR}" && pwd)
src=${BROOQ_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d /tmp/brooq-deb-run-test.XXXXXX)
db=
cleanup() {
  [ -z "$db" ] || psql -X -q -h "$BROOQ_TEST_PGHOST" -U postgres -d postgres \
    -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck source=tests/support/check.sh
. "$src/tests/support/check.sh"

version=$(sed -n 's/^#define BROOQ_VERSION *"\(.*\)"/\1/p' "$build/common/brq_version.h")
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
pkgs=(brooq-gateway brooqctl libbrooq-client1 libbrooq-client-dev)
debs=()
for p in "${pkgs[@]}"; do debs+=("$build/debs/${p}_${version}_${arch}.deb"); done
r=$tmp/root

# ---- 1. unpacked: versions and the gateway's configuration check -----------------------------
unpack() {
  local d
  for d in "${debs[@]}"; do dpkg -x "$d" "$r"; done
}
check "dpkg -x of the four packages" unpack
# A clean environment, as systemd gives the service (no BROOQ_* of the test harness).
run() { env -i PATH=/usr/bin:/bin "$@"; }
check "unpacked brooqctl --version" bash -c '[ "$("$1" --version)" = "brooqctl $2" ]' _ "$r/usr/bin/brooqctl" "$version"
check "unpacked brooq-gateway --version" \
  bash -c '[ "$("$1" --version)" = "brooq-gateway $2" ]' _ "$r/usr/bin/brooq-gateway" "$version"

# The credentials as README lays them out for the unit, and as systemd copies them into
# the service's $CREDENTIALS_DIRECTORY (flattened, 0400).
creds=$r/etc/brooq/credentials
install -d -m 0700 "$creds" "$creds/worker-tokens" "$creds/admin-tokens"
echo "host=$tmp/nosuchdir dbname=brooq user=brooq" >"$creds/dsn"
head -c 32 /dev/urandom | base64 >"$creds/worker-tokens/1"
head -c 32 /dev/urandom | base64 >"$creds/admin-tokens/1"
chmod 0600 "$creds/dsn" "$creds"/*-tokens/*
copied=$tmp/run-credentials
install -d -m 0700 "$copied"
install -m 0400 "$creds/dsn" "$copied/dsn"
install -m 0400 "$creds/worker-tokens/1" "$copied/worker-token_1"
install -m 0400 "$creds/admin-tokens/1" "$copied/admin-token_1"
env_file=$r/etc/brooq/brooq-gateway.env
cp "$env_file" "$tmp/packaged.env"
cat >>"$env_file" <<ENV
BROOQ_DSN_FILE=$creds/dsn
BROOQ_WORKER_TOKEN_FILES=$creds/worker-tokens/1
BROOQ_ADMIN_TOKEN_FILES=$creds/admin-tokens/1
BROOQ_LISTEN=ipc://$tmp/gateway.sock
ENV
check "unpacked brooq-gateway --check-config: settings naming files in the root" \
  bash -c 'out=$(env -i PATH=/usr/bin:/bin "$1" --env-file "$2" --check-config); echo "$out"; [ "$out" = "configuration ok" ]' \
  _ "$r/usr/bin/brooq-gateway" "$env_file"
check "unpacked brooq-gateway --check-config: the packaged settings and the unit's credentials directory" \
  bash -c 'out=$(env -i PATH=/usr/bin:/bin "$1" --env-file "$2" --credentials-dir "$3" --check-config); echo "$out"; [ "$out" = "configuration ok" ]' \
  _ "$r/usr/bin/brooq-gateway" "$tmp/packaged.env" "$creds"
check "unpacked brooq-gateway --check-config: the packaged settings and the credentials as systemd copies them" \
  bash -c 'out=$(env -i PATH=/usr/bin:/bin CREDENTIALS_DIRECTORY="$3" "$1" --env-file "$2" --check-config); echo "$out"; [ "$out" = "configuration ok" ]' \
  _ "$r/usr/bin/brooq-gateway" "$tmp/packaged.env" "$copied"
# (An empty $CREDENTIALS_DIRECTORY: this machine's own /etc/brooq/credentials, if any,
# stays out of it.)
mkdir "$tmp/no-credentials"
unconfigured() {
  local rc=0
  run CREDENTIALS_DIRECTORY="$tmp/no-credentials" "$r/usr/bin/brooq-gateway" --env-file "$tmp/packaged.env" --check-config || rc=$?
  [ "$rc" -eq 2 ]
}
check "the packaged settings alone are refused (exit 2): no DSN, no token" unconfigured

# ---- 2. the unpacked brooqctl and its migrations ------------------------------------------------
check "unpacked brooqctl reads the unpacked migrations" \
  grep -qF "else $r/usr/share/brooq/migrations" <(run "$r/usr/bin/brooqctl" --help)
migrate_fresh() {
  [ -n "${BROOQ_TEST_PGHOST:-}" ] || { echo "BROOQ_TEST_PGHOST is not set (run through tests/run.sh)"; return 1; }
  db=brooq_deb_run_test_$$
  psql -X -q -h "$BROOQ_TEST_PGHOST" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE $db"
  run BROOQ_DSN="host=$BROOQ_TEST_PGHOST user=postgres dbname=$db" "$r/usr/bin/brooqctl" migrate up >"$tmp/migrate.out"
  cat "$tmp/migrate.out"
  diff <(cd "$src/migrations" && ls | sed 's|^|OK    |') "$tmp/migrate.out"
}
check "unpacked brooqctl migrates a fresh database without --dir" migrate_fresh

# ---- 3. building against the unpacked -dev package -----------------------------------------------
cat >"$tmp/app.c" <<'C'
#include <brooq/brooq.h>
#include <stdio.h>
#include <string.h>
int
main(void)
{
	brooq_client           *c;
	const brooq_client_opts o = {
		.size = sizeof(brooq_client_opts), .url = "ipc:///nonexistent", .token_file = "/nonexistent"};
	if (strcmp(brooq_state_name(BROOQ_DEAD), "dead") != 0)
		return 1;
	if (brooq_client_open(&o, &c) != BROOQ_ETOKEN)
		return 2;
	printf("%s\n", brooq_last_message());
	return 0;
}
C
pc_build() {
  local flags
  flags=$(PKG_CONFIG_PATH=$r/usr/lib/$ma/pkgconfig pkg-config --cflags --libs brooq-client)
  echo "pkg-config: $flags"
  # shellcheck disable=SC2086
  cc -Wall -Werror -o "$tmp/app" "$tmp/app.c" $flags
  LD_LIBRARY_PATH=$r/usr/lib/$ma "$tmp/app" || return 1
  LD_LIBRARY_PATH=$r/usr/lib/$ma ldd "$tmp/app" | grep -F "$r/usr/lib/$ma/libbrooq-client.so.1"
}
check "a program builds with the unpacked .pc (relocatable) and runs on the unpacked library" pc_build
cmake_build() {
  mkdir -p "$tmp/cm"
  cp "$tmp/app.c" "$tmp/cm/app.c"
  cat >"$tmp/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(app C)
find_package(brooq-client CONFIG REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE brooq::client)
CM
  cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$r/usr" >/dev/null
  cmake --build "$tmp/cm/build" >/dev/null
  LD_LIBRARY_PATH=$r/usr/lib/$ma "$tmp/cm/build/app"
}
check "a program builds with the unpacked CMake package and runs" cmake_build
# The module opens the library by soname (no BROOQ_LIB): the loader finds the unpacked
# one as it finds the installed one. Python is Debian's, with its python3-cffi.
py_import() {
  local out
  dpkg -x "$build/debs/python3-brooq_${version}_all.deb" "$r" || return 1
  out=$(env -u BROOQ_LIB PYTHONPATH="$r/usr/lib/python3/dist-packages" LD_LIBRARY_PATH="$r/usr/lib/$ma" \
    PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c 'import brooq, importlib.metadata as m
print(brooq.__file__, brooq.library_version(), m.version("brooq"), brooq.NotFound.__mro__[1].__name__)') || return 1
  echo "$out"
  [ "$out" = "$r/usr/lib/python3/dist-packages/brooq/__init__.py $version $(sed -n 's/^VERSION = "\(.*\)"$/\1/p' "$src/client/python/_build/brooq_build.py") Error" ]
}
check "unpacked python3-brooq imports and opens the unpacked library by its soname" py_import

# ---- 4. dpkg --root: the maintainer scripts ---------------------------------------------------------
# A scratch dpkg database; scripts run on this host with DPKG_ROOT set (as in a
# chrootless bootstrap). The root has no libc package, hence --force-depends.
d=$tmp/droot
mkdir -p "$d/var/lib/dpkg/info" "$d/var/lib/dpkg/updates" "$d/etc"
touch "$d/var/lib/dpkg/status"
dpkg_root() { dpkg --root="$d" --force-script-chrootless --force-depends "$@"; }
check "dpkg --root -i of the four packages runs their maintainer scripts" dpkg_root -i "${debs[@]}"
check "postinst created the brooq group (systemd-sysusers)" grep '^brooq:' "$d/etc/group"
check "the unit is not enabled" \
  bash -c '! find "$1/etc/systemd" -name "brooq-gateway.service" 2>/dev/null | grep .' _ "$d"
check "the settings file is a registered conffile" bash -c '
  dpkg-query --admindir="$1/var/lib/dpkg" -W -f="\${Conffiles}\n" brooq-gateway | grep -E "^ /etc/brooq/brooq-gateway.env [0-9a-f]{32}$"' _ "$d"
check "installing again (the upgrade path) works" dpkg_root -i "${debs[0]}"
purge() {
  dpkg_root --purge libbrooq-client-dev libbrooq-client1 brooqctl brooq-gateway
  [ ! -e "$d/etc/brooq/brooq-gateway.env" ] && [ ! -e "$d/usr/bin/brooq-gateway" ] &&
    [ -z "$(dpkg-query --admindir="$d/var/lib/dpkg" -W -f='${db:Status-Abbrev}\n' 2>/dev/null | grep -v '^un')" ]
}
check "purging removes the packages and the settings file" purge

# ---- 5. an upgrade restarts the gateway only onto a schema it serves -------------------------------
# The packaged postinst as dpkg runs it on an upgrade ("configure OLD-VERSION"), on this
# host, with systemd's commands replaced by stubs that record their calls (is-active
# answers $STUB_ACTIVE), the unpacked brooqctl, and the database of section 2.
ctl=$tmp/ctl
stubs=$tmp/stubs
mkdir -p "$stubs"
dpkg-deb -e "${debs[0]}" "$ctl"
for c in systemctl deb-systemd-invoke deb-systemd-helper systemd-sysusers; do
  cat >"$stubs/$c" <<STUB
#!/bin/sh
echo "$c \$*" >>"$tmp/calls"
case "\$*" in "--quiet is-active "*) exit \${STUB_ACTIVE:-0} ;; esac
exit 0
STUB
  chmod +x "$stubs/$c"
done
ln -s "$r/usr/bin/brooqctl" "$stubs/brooqctl"
dsn_file=$tmp/upgrade-dsn
newest=$(cd "$src/migrations" && ls | tail -n 1)
upgrade() { # upgrade [STUB_ACTIVE [OLD-VERSION]]: the postinst's stderr in $tmp/postinst.err
  : >"$tmp/calls"
  env -i PATH="$stubs:/usr/bin:/bin" BROOQ_DSN_FILE="$dsn_file" STUB_ACTIVE="${1:-0}" \
    sh "$ctl/postinst" configure "${2-0.0.9}" 2>"$tmp/postinst.err"
  cat "$tmp/calls" "$tmp/postinst.err"
}
restarted() { grep -qx "deb-systemd-invoke try-restart brooq-gateway.service" "$tmp/calls"; }
said() { grep -qF -- "$1" "$tmp/postinst.err" || { echo "not said: $1"; return 1; }; }
brooqctl_on() { run BROOQ_DSN="host=$BROOQ_TEST_PGHOST user=postgres dbname=$db" "$r/usr/bin/brooqctl" "$@"; }

check "the postinst's DSN is the unit's dsn credential" bash -c '
  unit=$(sed -n "s/^LoadCredential=dsn://p" "$1"); post=$(sed -n "s/^dsn_file=\${BROOQ_DSN_FILE:-\(.*\)}$/\1/p" "$2")
  echo "unit: $unit postinst: $post"; [ -n "$unit" ] && [ "$unit" = "$post" ]' \
  _ "$r/lib/systemd/system/brooq-gateway.service" "$ctl/postinst"
echo "host=$BROOQ_TEST_PGHOST user=postgres dbname=$db" >"$dsn_file"
one_old() { brooqctl_on migrate down; }
check "the database goes one migration back ($newest undone)" one_old
refused() {
  local rc=0
  run BROOQ_DSN_FILE="$dsn_file" BROOQ_WORKER_TOKEN_FILES="$creds/worker-tokens/1" \
    BROOQ_ADMIN_TOKEN_FILES="$creds/admin-tokens/1" BROOQ_LISTEN="ipc://$tmp/upgrade.sock" BROOQ_HTTP_LISTEN=off \
    timeout 30 "$r/usr/bin/brooq-gateway" 2>"$tmp/gw.log" || rc=$?
  cat "$tmp/gw.log"
  [ "$rc" -eq 78 ] && [ "$(grep -c "level=error msg=schema_too_old .*hint=\"run: brooqctl migrate up\"" "$tmp/gw.log")" -eq 1 ]
}
check "the unpacked gateway refuses it: exit 78, one msg=schema_too_old line" refused
pending_upgrade() {
  upgrade && ! restarted && said "brooq-gateway: not restarted: the database lacks migrations this version needs: $newest" &&
    said "BROOQ_DSN_FILE=$dsn_file brooqctl migrate up" && said "systemctl restart brooq-gateway"
}
check "upgrade, migration pending: not restarted, the commands printed" pending_upgrade
migrated_upgrade() { brooqctl_on migrate up && upgrade && restarted && [ ! -s "$tmp/postinst.err" ]; }
check "upgrade after brooqctl migrate up: try-restart, nothing printed" migrated_upgrade
echo "host=$tmp/nosuchdir dbname=brooq user=brooq" >"$dsn_file"
unreachable_upgrade() { upgrade && ! restarted && said "not restarted: could not read the database's migrations"; }
check "upgrade, database unreachable: not restarted, said why" unreachable_upgrade
stopped_upgrade() { upgrade 3 && ! restarted && [ ! -s "$tmp/postinst.err" ]; }
check "upgrade of a stopped gateway: nothing restarted or printed" stopped_upgrade
fresh_install() { upgrade 0 "" && ! restarted && ! grep -q is-active "$tmp/calls" && [ ! -s "$tmp/postinst.err" ]; }
check "first install: the gateway is not even asked about" fresh_install
rm "$dsn_file"
no_dsn_upgrade() { upgrade && ! restarted && said "not restarted: cannot read the DSN in $dsn_file"; }
check "upgrade without the DSN file: not restarted, said why" no_dsn_upgrade

check_done
