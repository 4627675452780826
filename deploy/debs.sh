#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages (brooq-gateway, brooqctl, libbrooq-client1,
# libbrooq-client-dev, python3-brooq) from this checkout with debian/ and dpkg-buildpackage, and
# checks them with lintian (tags explained in debian/*.lintian-overrides).
#
#   deploy/debs.sh [OUTDIR]      default OUTDIR: dist/
#
# The build runs on a copy of the tracked (and new, not ignored) files in a
# temporary folder, so neither the checkout nor its parent gets build litter, and
# uncommitted changes are packaged as they are. OUTDIR gets the .deb files (and
# the -dbgsym .deb), the .buildinfo and the .changes; older brooq packages there
# are replaced. Exits non-zero on a build failure or a lintian error or warning.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)

[ "${BROOQ_DEBS_NO_DEPS:-}" = 1 ] || "$root/deploy/deps.sh"

work=$(mktemp -d /tmp/brooq-debs.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$root" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf -) | tar -C "$work/src" -xf -
else
  tar -C "$root" --exclude='./build*' --exclude=./dist --exclude=./.brooq -cf - . | tar -C "$work/src" -xf -
fi

# NNG is built by deploy/deps.sh into .deps/nng (git-ignored) and linked
# statically: the package build uses that very build.
mkdir -p "$work/src/.deps"
cp -a "$root/.deps/nng" "$work/src/.deps/nng"

echo "== dpkg-buildpackage (log: $out/build.log)"
start=$(date +%s)
if ! (cd "$work/src" && dpkg-buildpackage -b -us -uc -j2) >"$out/build.log" 2>&1; then
  tail -n 40 "$out/build.log"
  echo "debs: dpkg-buildpackage failed (whole log: $out/build.log)"
  exit 1
fi
echo "   built in $(($(date +%s) - start)) s"

rm -f "$out"/brooq*_*.deb "$out"/libbrooq*_*.deb "$out"/python3-brooq_*.deb "$out"/brooq_*.buildinfo "$out"/brooq_*.changes
mv "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes "$out"/
ls -l "$out"/*.deb | awk '{print "   " $5 "\t" $NF}'

echo "== lintian"
start=$(date +%s)
changes=$(ls "$out"/brooq_*.changes)
if ! lintian --fail-on error,warning --display-info "$changes"; then
  echo "debs: lintian reported errors or warnings (above)"
  exit 1
fi
echo "   lintian clean (errors, warnings) in $(($(date +%s) - start)) s"
