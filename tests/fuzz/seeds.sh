#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Writes the request and reply examples of docs/protocol.md, as printed by the real
# encoder (brooq_proto_examples), as binary seed files:
#   OUTDIR/request/<example>.msgpack  OUTDIR/reply/<example>.msgpack
# Usage: seeds.sh EXAMPLES_PROGRAM OUTDIR. Fails when a message's hex does not add up
# to the byte count printed above it, or when no example is found.
set -euo pipefail
examples=$1
out=$2

mkdir -p "$out/request" "$out/reply"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$examples" >"$tmp"

# One line per message: "<dir>/<name>.msgpack <bytes> <hex>". The hex is the second
# fenced block after a "Request (N bytes):" or "Reply (N bytes):" line.
count=0
while read -r path bytes hex; do
  printf '%b' "$(sed 's/../\\x&/g' <<<"$hex")" >"$out/$path.tmp"
  size=$(wc -c <"$out/$path.tmp")
  if [ "$size" -ne "$bytes" ]; then
    echo "seeds: $path: $size bytes written, the examples say $bytes" >&2
    exit 1
  fi
  mv "$out/$path.tmp" "$out/$path"
  count=$((count + 1))
done < <(awk '
  /^### / { name = substr($0, 5); gsub(/[^A-Za-z0-9]+/, "-", name); next }
  /^(Request|Reply) \([0-9]+ bytes\):$/ {
    dir = ($1 == "Request") ? "request" : "reply"
    bytes = substr($2, 2); fences = 0; hex = ""; next
  }
  /^```$/ && dir != "" {
    fences++
    if (fences == 4) { printf "%s/%s.msgpack %s %s\n", dir, name, bytes, hex; dir = "" }
    next
  }
  dir != "" && fences == 3 { line = $0; gsub(/ /, "", line); hex = hex line }
' "$tmp")

if [ "$count" -lt 2 ]; then
  echo "seeds: no examples found in the output of $examples" >&2
  exit 1
fi
echo "seeds: $count protocol examples in $out"
