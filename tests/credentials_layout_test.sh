#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One credentials layout: the unit's LoadCredential= lines are the reference, and every
# other place that names the layout must say the same (issue 27):
#   1. the unit loads dsn, worker-token and admin-token from one directory R
#      (/etc/brooq/credentials), and its commented-out lines (TLS) from R too;
#   2. `brooq-gateway --help` (the loader's own table) lists exactly the unit's
#      credentials, the directory forms as DIR/SOURCE/NAME, and R as --check-config's
#      default; `brooqctl --help` and brooqctl(1) name R's admin-token directory as the
#      default token;
#   3. README's and brooq-gateway(8)'s install steps create every directory the unit
#      loads and write every file it loads (a token into each token directory), and
#      README's table, brooq-gateway(8)'s CREDENTIALS and the unit's comment name every
#      source;
#   4. no document, man page, env file or help text names a path under R that the unit
#      does not load (R/admin-token, R/worker-token...), nor a credential elsewhere under
#      /etc/brooq (/etc/brooq/admin-token, /etc/brooq/dsn...);
#   5. --selftest: each kind of drift, planted in a copy, is reported.
# Usage: credentials_layout_test.sh BUILD_DIR [--selftest]
set -euo pipefail
src=${BROOQ_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=$(cd "${1:?usage: credentials_layout_test.sh BUILD_DIR [--selftest]}" && pwd)
tmp=$(mktemp -d /tmp/brooq-creds-layout.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$build/bin/brooq-gateway" --help >"$tmp/gateway-help.txt"
"$build/bin/brooqctl" --help >"$tmp/brooqctl-help.txt"

cat >"$tmp/check.py" <<'PY'
import os, re, sys

root, gw_help_path, ctl_help_path = sys.argv[1:4]
problems = []
def problem(msg):
    problems.append(msg)

def read(rel):
    path = os.path.join(root, rel)
    return open(path).read() if os.path.exists(path) else None

# 1. the unit
unit = read("deploy/systemd/brooq-gateway.service")
active = re.findall(r"^LoadCredential=([^:\s]+):(\S+)$", unit, re.M)
commented = re.findall(r"^#\s+LoadCredential=([^:\s]+):(\S+)$", unit, re.M)
ids = [i for i, _ in active]
for want in ("dsn", "worker-token", "admin-token"):
    if want not in ids:
        problem(f"unit: no LoadCredential={want}:")
# The directory is the gateway's (--check-config's default, from its code); the unit's
# lines must all be in it.
gw_help = open(gw_help_path).read()
m = re.search(r"reads the unit's (/\S+?),? ", re.sub(r"\s+", " ", gw_help))
R = m.group(1) if m else "/etc/brooq/credentials"
if m is None:
    problem("brooq-gateway --help does not name the unit's credentials directory")
for i, p in active + commented:
    if os.path.dirname(p) != R:
        problem(f"unit: LoadCredential={i}:{p} is not in {R}/ (one directory for every credential)")
sources = {p[len(R) + 1:]: i for i, p in active}        # "worker-tokens" -> "worker-token"
optional = {p[len(R) + 1:]: i for i, p in commented}

# 2. the programs' help
rows = re.findall(r"^\s+DIR/(\S+?)(/NAME)?\s+.*\(credential (\S+?)(_NAME)?\)$", gw_help, re.M)
helped = {s: i for s, _, i, _ in rows}
is_dir = {s for s, d, _, _ in rows if d}
if helped != sources:
    problem(f"brooq-gateway --help lists {sorted(helped.items())}, the unit loads {sorted(sources.items())}")
for s, d, i, n in rows:
    if bool(d) != bool(n):
        problem(f"brooq-gateway --help: DIR/{s}{d} is credential {i}{n}")
admin_dir = next((s for s, i in sources.items() if i == "admin-token"), None)
if admin_dir is not None and admin_dir not in is_dir:
    problem(f"the admin tokens ({admin_dir}) are not a directory of one token per file")
ctl_default = f"{R}/{admin_dir}/"
ctl_help = re.sub(r"\s+", " ", open(ctl_help_path).read())
if ctl_default not in ctl_help:
    problem(f"brooqctl --help does not name its default token directory {ctl_default}")
ctl_man = read("docs/man/brooqctl.1.scd")
if ctl_default not in ctl_man:
    problem(f"brooqctl(1) does not name its default token directory {ctl_default}")

# 3. the install steps, README's table, the man page's CREDENTIALS, the unit's comment
def steps(rel, text):
    for s in sorted(sources):
        p = f"{R}/{s}"
        if s in is_dir:
            if not re.search(r"install -d [^\n]*" + re.escape(p) + r"(\s|$)", text):
                problem(f"{rel}: the install steps do not create the directory {p}")
            if not re.search(r">\s*" + re.escape(p) + r"/[\w.-]+", text):
                problem(f"{rel}: the install steps write no token into {p}/")
        elif not re.search(r">\s*" + re.escape(p) + r"(\s|$)", text):
            problem(f"{rel}: the install steps do not write {p}")
readme = read("README.md")
m = re.search(r"^### Running the gateway\n.*?^```sh\n(.*?)^```", readme, re.M | re.S)
if m is None:
    problem("README.md: no install steps under '### Running the gateway'")
else:
    steps("README.md", m.group(1))
man = read("docs/man/brooq-gateway.8.scd")
m = re.search(r"^# EXAMPLES\n(.*?)^# ", man, re.M | re.S)
steps("brooq-gateway(8) EXAMPLES", re.sub(r"\\\\\n\s*", " ", m.group(1)) if m else "")
for s, i in sorted(sources.items()):
    p = f"{R}/{s}" + ("/NAME" if s in is_dir else "")
    if not re.search(r"^\| `" + re.escape(p) + r"` \| `" + re.escape(i) + ("_NAME" if s in is_dir else "") + "` \|", readme, re.M):
        problem(f"README.md: the layout table has no row for {p} (credential {i})")
    if not re.search(r"^_" + re.escape(f"{R}/{s}") + ("/_NAME" if s in is_dir else "_") + r"$", man, re.M):
        problem(f"brooq-gateway(8) CREDENTIALS: no entry for {p}")
    if not re.search(r"^#\s+" + re.escape(f"{R}/{s}") + ("/NAME" if s in is_dir else "") + r"\s", unit, re.M):
        problem(f"the unit's comment does not show {p}")

# 4. every path under /etc/brooq in what the admin reads
docs = ["README.md", "docs/console.md", "docs/operations.md", "docs/security.md", "docs/brooqctl.md",
        "deploy/brooq-gateway.env.example", "deploy/brooq-gateway.env",
        "deploy/systemd/brooq-gateway.service"]
docs += sorted("docs/man/" + f for f in os.listdir(os.path.join(root, "docs/man")) if f.endswith(".scd"))
texts = [(d, read(d)) for d in docs]
texts += [("brooq-gateway --help", gw_help), ("brooqctl --help", open(ctl_help_path).read())]
known = set(sources) | set(optional)
path_re = re.compile(r"/etc/brooq(?:/[A-Za-z0-9._*-]+)*/?")
for name, text in texts:
    if text is None:
        if name != "deploy/brooq-gateway.env":
            problem(f"{name}: missing")
        continue
    for n, line in enumerate(text.splitlines(), 1):
        for p in path_re.findall(line):
            p = re.sub(r"/_", "/", p).rstrip("/._")  # scdoc's _underline_
            if p in ("/etc/brooq", "/etc/brooq/brooq-gateway.env", R) or p.startswith("/etc/brooq/tls/"):
                continue
            if not p.startswith(R + "/"):
                problem(f"{name}:{n}: {p}: not the layout (credentials live in {R}/)")
                continue
            rel = p[len(R) + 1:].split("/")
            ok = (len(rel) == 1 and (rel[0] in known or rel[0] == "*-tokens")) or \
                 (len(rel) == 2 and (rel[0] in is_dir or rel[0] == "*-tokens"))
            if not ok:
                problem(f"{name}:{n}: {p}: the unit loads no such credential")

for p in problems:
    print("drift:", p)
print(f"{len(active)} credentials loaded, {len(commented)} optional, {len(texts)} texts read, "
      f"{len(problems)} problem(s)")
sys.exit(1 if problems else 0)
PY

run() { python3 "$tmp/check.py" "$1" "$tmp/gateway-help.txt" "$tmp/brooqctl-help.txt"; }

if [ "${2:-}" != --selftest ]; then
  run "$src"
  exit
fi

# ---- self-test: a copy with one drift planted at a time must fail, naming it -------------------
pass=0 fail=0
plant() { # plant NAME EXPECTED-OUTPUT FILE SED-EXPRESSION
  local name=$1 want=$2 file=$3 expr=$4 copy=$tmp/copy
  rm -rf "$copy"
  mkdir -p "$copy/docs/man" "$copy/deploy/systemd"
  cp "$src/README.md" "$copy/"
  cp "$src"/docs/*.md "$copy/docs/"
  cp "$src"/docs/man/*.scd "$copy/docs/man/"
  cp "$src"/deploy/brooq-gateway.env* "$copy/deploy/"
  cp "$src/deploy/systemd/brooq-gateway.service" "$copy/deploy/systemd/"
  sed -i "$expr" "$copy/$file"
  if cmp -s "$src/$file" "$copy/$file"; then
    echo "FAIL $name: the plant changed nothing in $file"
    fail=$((fail + 1))
  elif out=$(run "$copy"); then
    echo "FAIL $name: not reported"
    fail=$((fail + 1))
  elif ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL $name: reported otherwise:"
    echo "$out" | sed 's/^/     /'
    fail=$((fail + 1))
  else
    echo "ok   $name"
    pass=$((pass + 1))
  fi
}
if run "$src" >/dev/null; then echo "ok   the checkout itself passes"; pass=$((pass + 1)); else
  echo "FAIL the checkout itself drifts"; fail=$((fail + 1)); fi
plant "README writes the old single token file" "README.md: the install steps write no token into /etc/brooq/credentials/admin-tokens/" \
  README.md 's|/etc/brooq/credentials/admin-tokens/1$|/etc/brooq/credentials/admin-token|'
plant "the unit loads another directory" "brooq-gateway --help lists" \
  deploy/systemd/brooq-gateway.service 's|^LoadCredential=admin-token:.*|LoadCredential=admin-token:/etc/brooq/credentials/admins|'
plant "the unit loads a file from elsewhere" "not in /etc/brooq/credentials/ (one directory" \
  deploy/systemd/brooq-gateway.service 's|^LoadCredential=dsn:.*|LoadCredential=dsn:/etc/brooq/dsn|'
plant "brooqctl(1) names /etc/brooq/admin-token" "docs/man/brooqctl.1.scd:" \
  docs/man/brooqctl.1.scd 's|BROOQ_TOKEN_FILE=$HOME/.brooq-token|BROOQ_TOKEN_FILE=/etc/brooq/admin-token|'
plant "console.md signs in with a file the unit does not load" "docs/console.md:" \
  docs/console.md 's|token@/etc/brooq/credentials/admin-tokens/1|token@/etc/brooq/credentials/admin-token|'
plant "the env example names /etc/brooq/dsn" "deploy/brooq-gateway.env.example:" \
  deploy/brooq-gateway.env.example 's|^#BROOQ_DSN_FILE=.*|#BROOQ_DSN_FILE=/etc/brooq/dsn|'
plant "the man page's steps skip a token directory" "brooq-gateway(8) EXAMPLES: the install steps do not create the directory /etc/brooq/credentials/worker-tokens" \
  docs/man/brooq-gateway.8.scd 's|    /etc/brooq/credentials/worker-tokens /etc/brooq/credentials/admin-tokens|    /etc/brooq/credentials/admin-tokens|'
plant "README's table misses a row" "README.md: the layout table has no row for /etc/brooq/credentials/dsn" \
  README.md '/^| `\/etc\/brooq\/credentials\/dsn`/d'
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
