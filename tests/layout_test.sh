#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The code's layout rules (docs/architecture.md, "Conventions"; issue 9), checked on the
# product code (gateway/, proto/, client/, common/; tests excepted):
#   - libpq only in the store (gateway/store/) and client/ctl/migrate.c;
#   - msgpack only in proto/;
#   - the gateway and the client never include each other's headers;
#   - no file over 800 lines, no function over 80 lines;
#   - no include loop between the files of one folder;
#   - the gateway's modules are folders (gateway/X/): code outside X includes only X's
#     public header, X/X.h, by that path; the gateway's root holds at most 25 entries.
# Each violation is printed with its file; any fails the test.
# Usage: layout_test.sh [ROOT]   (default: the checkout this script is in)
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
exec python3 - "$root" <<'PY'
import os, re, sys

root = sys.argv[1]
DIRS = ["gateway", "proto", "client", "common"]
MAX_FILE, MAX_FUNC = 800, 80

def sources():
    for d in DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    p = os.path.join(dirpath, n)
                    yield os.path.relpath(p, root), open(p, errors="replace").read()

def code_only(text):
    """The text without comments and string/char literals (newlines kept), so that a
    comment naming PQexec or a string holding "msgpack_" is not a use."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)

files = dict(sources())
code = {p: code_only(t) for p, t in files.items()}
if len(files) < 50:
    sys.exit(f"layout: only {len(files)} source files under {root}: wrong root?")
problems = []

# libpq and msgpack: who may call them.
libpq = re.compile(r"\bPQ[a-z][A-Za-z]*\s*\(|\bPGresult\b|\bPGconn\b")
def libpq_allowed(p):
    base = os.path.basename(p)
    return p.startswith("gateway/store/") or p == "client/ctl/migrate.c"
for p, text in files.items():
    if (libpq.search(code[p]) or "libpq-fe.h" in text) and not libpq_allowed(p):
        problems.append(f"{p}: uses libpq (only gateway/store/ and client/ctl/migrate.c may)")
    if (re.search(r"\bmsgpack_", code[p]) or re.search(r'#include\s*[<"]msgpack', text)) \
            and not p.startswith("proto/"):
        problems.append(f"{p}: uses msgpack (only proto/ may)")

# The gateway and the client never include each other.
for p, text in files.items():
    for inc in re.findall(r'#include\s+"([^"]+)"', text):
        if p.startswith("gateway/") and ("client/" in inc or inc.startswith("../client")):
            problems.append(f"{p}: includes the client's {inc}")
        if p.startswith("client/") and ("gateway/" in inc or inc.startswith("../gateway")):
            problems.append(f"{p}: includes the gateway's {inc}")
gw_headers = {os.path.basename(p) for p in files if p.startswith("gateway/") and p.endswith(".h")}
cl_headers = {os.path.basename(p) for p in files if p.startswith("client/") and p.endswith(".h")}
for p, text in files.items():
    own = gw_headers if p.startswith("gateway/") else cl_headers if p.startswith("client/") else set()
    other = cl_headers - gw_headers if p.startswith("gateway/") else gw_headers - cl_headers if p.startswith("client/") else set()
    for inc in re.findall(r'#include\s+"([^"/]+)"', text):
        if inc in other and inc not in own:
            problems.append(f"{p}: includes {inc}, a header of the {'client' if p.startswith('gateway/') else 'gateway'}")

# Sizes: a function body opens with "{" in column 0 and ends at its matching brace.
for p, text in files.items():
    lines = code[p].split("\n")
    if len(lines) > MAX_FILE:
        problems.append(f"{p}: {len(lines)} lines (at most {MAX_FILE})")
    depth, start, name = 0, None, "?"
    for i, line in enumerate(lines):
        if depth == 0 and line.startswith("{") and i > 0:
            start, j = i, i - 1
            while j > 0 and "(" not in lines[j]:
                j -= 1
            head = lines[j].split("(")[0].split()
            name = head[-1] if head else "?"
        depth += line.count("{") - line.count("}")
        if depth == 0 and start is not None and "}" in line:
            if i - start + 1 > MAX_FUNC:
                problems.append(f"{p}: {name} is {i - start + 1} lines (at most {MAX_FUNC})")
            start = None

# Include loops between the files of one folder.
by_dir = {}
for p in files:
    by_dir.setdefault(os.path.dirname(p), set()).add(os.path.basename(p))
for d, names in sorted(by_dir.items()):
    edges = {n: [i for i in re.findall(r'#include\s+"([^"/]+)"', files[os.path.join(d, n)]) if i in names and i != n]
             for n in names}
    state = {}
    def visit(n, path):
        state[n] = 1
        for m in edges[n]:
            if state.get(m) == 1:
                loop = path[path.index(m):] + [m]
                problems.append(f"{d}: include loop " + " -> ".join(loop))
            elif m not in state:
                visit(m, path + [m])
        state[n] = 2
    for n in sorted(names):
        if n not in state:
            visit(n, [n])

# The gateway's modules: a folder's public header is the one named after it.
gw = os.path.join(root, "gateway")
folders = sorted(d for d in os.listdir(gw) if os.path.isdir(os.path.join(gw, d)))
home = {}  # header basename -> its folder under gateway/ ("" for the root)
for p in files:
    parts = p.split("/")
    if parts[0] == "gateway" and p.endswith(".h"):
        home[parts[-1]] = parts[1] if len(parts) == 3 else ""
for d in folders:
    if not os.path.exists(os.path.join(gw, d, d + ".h")):
        problems.append(f"gateway/{d}: no public header {d}/{d}.h")
entries = len(os.listdir(gw))
if entries > 25:
    problems.append(f"gateway: {entries} entries at its root (at most 25: modules go in folders)")
for p, text in files.items():
    if not p.startswith("gateway/"):
        continue
    parts = p.split("/")
    own = parts[1] if len(parts) == 3 else ""
    for inc in re.findall(r'#include\s+"([^"]+)"', text):
        if "/" in inc:
            d, h = inc.split("/", 1)
            if d in folders and d != own and h != d + ".h":
                problems.append(f"{p}: includes {inc}, private to gateway/{d}/ (include {d}/{d}.h)")
        else:
            d = home.get(inc)
            if d and d != own:
                problems.append(f"{p}: includes {inc} of gateway/{d}/ by its bare name (include {d}/{d}.h)")

for pr in problems:
    print("layout:", pr)
print(f"layout: {len(files)} files checked, {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
PY
