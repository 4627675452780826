#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the NNG that brooq links statically: Debian bookworm's own source package of
# nng 1.5.2, plus brooq's patches in deploy/nng, in this order:
#   1518-disconnect-during-negotiation.patch  NNG issue #1518: one raw connect+close
#                                             wedges a 1.5.2 listener forever
#   rx-budget.patch                           a process-wide budget for the bytes of
#                                             received messages (nng_rx_budget_set)
#   expire-race.patch                         the expire thread must not cancel an
#                                             operation begun after the one it expired
#   http-limits.patch                         the HTTP server's limits: a body gate,
#                                             timeouts, a connection cap, a header cap,
#                                             a body budget, the peer's address
#   rep0-reply-leak.patch                     NNG issue #1713: a reply sent as its pipe
#                                             closes was never freed
#   tls-close-send.patch                      a tls+tcp connection ending mid-reply
#                                             wedged the reap thread (every later close
#                                             hung) or left a send waiting forever
#   rx-timeouts.patch                         deadlines for a handshake, a message's
#                                             body and an idle connection
#   close-mid-message.patch                   the ipc and tcp twins of tls-close-send
#   ctx-close-race.patch                      a context closed as its socket closes
#                                             used the socket's freed mutex
# as a static, position-
# independent libnng.a with TLS (mbedtls), installed into .deps/nng in the checkout
# (git-ignored). The top-level CMakeLists.txt finds it there.
#
#   deploy/nng/build.sh     called by deploy/deps.sh, after the Debian packages
#
# Cached: when .deps/nng holds a build of this script and these patches, it does nothing
# and needs no network. Otherwise it adds a deb-src entry for bookworm if apt has none
# (/etc/apt/sources.list.d/brooq-bookworm-src.sources, same mirror as the bookworm
# `deb` entry), fetches the source with `apt-get source` (kept in .deps/src, so a
# rebuild with a changed patch needs no network either), and builds (a few seconds).
# Needs root or sudo only for that one-time apt step. Environment: BROOQ_NNG_PREFIX
# (default .deps/nng) to install elsewhere.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
deps="$root/.deps"
prefix=${BROOQ_NNG_PREFIX:-$deps/nng}
srcdir="$deps/src"
patches=("$here/1518-disconnect-during-negotiation.patch" "$here/rx-budget.patch" "$here/expire-race.patch"
  "$here/http-limits.patch" "$here/rep0-reply-leak.patch" "$here/tls-close-send.patch"
  "$here/rx-timeouts.patch" "$here/close-mid-message.patch" "$here/ctx-close-race.patch")
want_upstream=1.5.2 # the patches are written against this release

# What a build in $prefix must have been made from: this script and the patches.
stamp_want=$(cat "$0" "${patches[@]}" | sha256sum | cut -d' ' -f1)
stamp="$prefix/.brooq-build"
if [ -f "$prefix/lib/libnng.a" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$stamp_want" ]; then
  exit 0
fi

mkdir -p "$deps"
# One build at a time (tests/run.sh and deploy/demo.sh may start together); the
# second one then finds the cache.
exec 9>"$deps/.nng.lock"
flock 9
if [ -f "$prefix/lib/libnng.a" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$stamp_want" ]; then
  exit 0
fi

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)

# The apt index targets configured for bookworm: "TYPE URI" lines.
bookworm_targets() {
  apt-get indextargets --no-release-info --format '$(CREATED_BY) $(REPO_URI) $(RELEASE)' \
    | awk '$3 == "bookworm" { print $1, $2 }' | sort -u
}

# Adds a deb-src entry for bookworm (main) when apt has none, on the mirror that the
# bookworm `deb` entry uses; refreshes the index when it had to add one or when apt
# does not know the source package yet.
ensure_deb_src() {
  local added=0 uri keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  if ! bookworm_targets | grep -q '^Sources '; then
    uri=$(bookworm_targets | awk '$1 == "Packages" { print $2; exit }')
    if [ -z "$uri" ]; then
      echo "nng: apt has no entry for Debian bookworm; add one (deb and deb-src, main) and rerun" >&2
      exit 1
    fi
    echo "nng: adding a deb-src entry for bookworm ($uri) to /etc/apt/sources.list.d/brooq-bookworm-src.sources"
    {
      echo "Types: deb-src"
      echo "URIs: $uri"
      echo "Suites: bookworm"
      echo "Components: main"
      [ -f "$keyring" ] && echo "Signed-By: $keyring"
    } | "${sudo[@]}" tee /etc/apt/sources.list.d/brooq-bookworm-src.sources >/dev/null
    added=1
  fi
  if [ $added -eq 1 ] || ! apt-cache showsrc nng 2>/dev/null | grep -q "^Version: $want_upstream-"; then
    "${sudo[@]}" apt-get update -qq
  fi
}

# Sets $dsc to the bookworm nng source package in $srcdir, fetching it if needed.
fetch_source() {
  dsc=$(ls "$srcdir"/nng_"$want_upstream"-*.dsc 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$dsc" ] && return 0
  ensure_deb_src
  mkdir -p "$srcdir"
  echo "nng: fetching Debian bookworm's source package of nng"
  # --download-only: unpacked below, fresh for every build. The sandbox user would
  # not be able to write into a root-owned checkout, so download as ourselves.
  (cd "$srcdir" && apt-get source -qq --download-only -o APT::Sandbox::User=root nng/bookworm)
  dsc=$(ls "$srcdir"/nng_"$want_upstream"-*.dsc 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$dsc" ]; then
    echo "nng: bookworm's source package is not nng $want_upstream (found: $(ls "$srcdir")); update the patch" >&2
    exit 1
  fi
}

fetch_source
start=${EPOCHREALTIME/./}
work="$deps/nng-build"
rm -rf "$work" "$prefix.new"
mkdir -p "$work"
echo "nng: building $(basename "$dsc" .dsc) + ${#patches[@]} patches (static, PIC, TLS) into $prefix"
# dpkg-source applies Debian's own patches (debian/patches) as their build does.
dpkg-source --no-check -x "$dsc" "$work/src" >/dev/null
for patchfile in "${patches[@]}"; do
  if ! patch -d "$work/src" -p1 --forward --quiet <"$patchfile"; then
    echo "nng: $(basename "$patchfile") does not apply to $(basename "$dsc")" >&2
    exit 1
  fi
done
cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INSTALL_PREFIX="$prefix.new" -DCMAKE_INSTALL_LIBDIR=lib \
  -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DNNG_ENABLE_TLS=ON \
  -DNNG_TESTS=OFF -DNNG_TOOLS=OFF -DNNG_ENABLE_NNGCAT=OFF >"$work/configure.log" 2>&1 \
  || { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" -j "$(nproc)" >"$work/build.log" 2>&1 || { tail -n 50 "$work/build.log" >&2; exit 1; }
cmake --install "$work/build" >/dev/null
echo "$stamp_want" >"$prefix.new/.brooq-build"
rm -rf "$prefix"
mv "$prefix.new" "$prefix"
rm -rf "$work"
ms=$(((${EPOCHREALTIME/./} - start) / 1000))
printf 'nng: built in %d.%01d s\n' $((ms / 1000)) $((ms % 1000 / 100))
