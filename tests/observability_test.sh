#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks deploy/prometheus and deploy/grafana against what the gateway really renders:
#   1. promtool check config / check rules / test rules on deploy/prometheus;
#   2. the dashboard JSON parses and every panel has a query;
#   3. a real exposition (metrics_test --dump-exposition, every series touched)
#      passes `promtool check metrics`;
#   4. every brooq_* metric, and every literal label value, that a rule or a
#      dashboard query names exists in that exposition;
#   5. the database-wide gauges (every gateway reports the same figures) are reduced
#      across instances with max before anything sums them, so that N gateways do
#      not show N times the jobs (checked to fail on a panel that sums them).
# Usage: observability_test.sh PATH/TO/metrics_test
set -euo pipefail
root=${BROOQ_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
dump_bin=${1:?usage: observability_test.sh PATH/TO/metrics_test}
prom=$root/deploy/prometheus
dash=$root/deploy/grafana/brooq-dashboard.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pass=0
fail=0
check() { # check NAME COMMAND...
  local name=$1
  shift
  if "$@" >"$tmp/out" 2>&1; then
    pass=$((pass + 1))
    echo "ok   $name"
  else
    fail=$((fail + 1))
    echo "FAIL $name"
    sed 's/^/     /' "$tmp/out"
  fi
}

command -v promtool >/dev/null || { echo "promtool not found (deploy/deps.sh installs prometheus)"; exit 1; }

check "promtool check config prometheus.yml" promtool check config "$prom/prometheus.yml"
check "promtool check rules brooq-rules.yml" promtool check rules "$prom/brooq-rules.yml"
# test rules resolves rule_files relative to the test file.
check "promtool test rules brooq-rules.test.yml" promtool test rules "$prom/brooq-rules.test.yml"

"$dump_bin" --dump-exposition >"$tmp/exposition.txt"
check "exposition is not empty" test -s "$tmp/exposition.txt"
check "promtool check metrics on a real exposition" \
  bash -c 'out=$(promtool check metrics <"$1" 2>&1); rc=$?; echo "$out"; [ $rc -eq 0 ] && [ -z "$out" ]' _ "$tmp/exposition.txt"

cat >"$tmp/names.py" <<'PY'
import json, re, sys

expo_path, dash_path, rules_path = sys.argv[1:4]

# Families and samples of the real exposition.
types, samples = {}, {}
for line in open(expo_path):
    line = line.rstrip("\n")
    m = re.match(r"# TYPE (\S+) (\S+)$", line)
    if m:
        types[m.group(1)] = m.group(2)
        continue
    if not line or line.startswith("#"):
        continue
    m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ", line)
    labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
    samples.setdefault(m.group(1), []).append(labels)

names = set()
for fam, t in types.items():
    if t == "histogram":
        names |= {fam + "_bucket", fam + "_sum", fam + "_count"}
    elif t == "summary":
        names |= {fam + "_sum", fam + "_count"}
    else:
        names.add(fam)
problems = [f"family {n} has no sample in the exposition" for n in sorted(names) if n not in samples]

# Every PromQL text of the dashboard (panel targets, variable queries) and the rules.
exprs = []
dash = json.load(open(dash_path))
def walk(panels):
    for p in panels:
        for t in p.get("targets", []):
            if not t.get("expr"):
                problems.append(f"dashboard panel {p.get('title')!r}: target without expr")
            exprs.append(("dashboard: " + p.get("title", "?"), t.get("expr", "")))
        walk(p.get("panels", []))
walk(dash.get("panels", []))
for v in dash.get("templating", {}).get("list", []):
    if v.get("type") == "query":
        exprs.append(("dashboard variable " + v["name"], v.get("definition", "")))
if not exprs:
    problems.append("dashboard has no queries")

# The rules file is YAML; its expr lines are single-line scalars here.
for line in open(rules_path):
    m = re.match(r"\s*expr:\s*(.+)$", line)
    if m:
        exprs.append(("rule", m.group(1)))

target_labels = {"job", "instance"}
used = set()
for where, e in exprs:
    for n in re.findall(r"\bbrooq_[a-z0-9_]+", e):
        used.add(n)
        if n not in names:
            problems.append(f"{where}: {n} is not rendered by the gateway")
    # Literal matchers on our metrics: the label must exist and the value (or each
    # alternative of a simple a|b regex) must occur in the exposition.
    for n, sel in re.findall(r"\b(brooq_[a-z0-9_]+)\{([^}]*)\}", e):
        for lab, op, val in re.findall(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"', sel):
            if lab in target_labels or n not in samples or "$" in val:
                continue
            seen = {s.get(lab) for s in samples[n]} - {None}
            if not seen:
                problems.append(f"{where}: {n} has no label {lab}")
                continue
            if op in ("=", "!=") or (op in ("=~", "!~") and re.fullmatch(r"[\w|]+", val)):
                for alt in val.split("|"):
                    if alt not in seen:
                        problems.append(f"{where}: {n}{{{lab}=\"{alt}\"}} never occurs (seen: {sorted(seen)})")

for p in problems:
    print(p)
print(f"{len(exprs)} queries, {len(used)} distinct brooq metrics used, {len(names)} rendered")
sys.exit(1 if problems else 0)
PY
check "rules and dashboard query only rendered metrics" \
  python3 "$tmp/names.py" "$tmp/exposition.txt" "$dash" "$prom/brooq-rules.yml"
check "dashboard JSON parses" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$dash"

cat >"$tmp/dbwide.py" <<'PY'
import json, re, sys

# Gauges that describe the whole database: each gateway reports the same value.
DB_WIDE = ("brooq_jobs", "brooq_ready_oldest_age_seconds", "brooq_job_table_dead_tuples",
           "brooq_job_table_live_tuples", "brooq_job_table_size_bytes", "brooq_job_table_index_size_bytes",
           "brooq_job_table_last_autovacuum_age_seconds", "brooq_job_table_last_vacuum_age_seconds",
           "brooq_db_oldest_transaction_age_seconds")
dash_path, rules_path = sys.argv[1:3]

exprs = []
def walk(panels):
    for p in panels:
        for t in p.get("targets", []):
            exprs.append(("dashboard panel " + repr(p.get("title")), t.get("expr", "")))
        walk(p.get("panels", []))
walk(json.load(open(dash_path)).get("panels", []))
for line in open(rules_path):
    m = re.match(r"\s*expr:\s*(.+)$", line)
    if m:
        exprs.append(("rule", m.group(1)))

# The selector must be the direct argument of max/min/avg (optionally by/without);
# when the expression also sums, that reduction must not keep `instance`.
wrap = re.compile(r"\b(max|min|avg)\s*(?:(by|without)\s*\(([^)]*)\)\s*)?\(\s*$")
problems, seen = [], 0
for where, e in exprs:
    for m in re.finditer(r"\b(%s)\b" % "|".join(DB_WIDE), e):
        seen += 1
        w = wrap.search(e[: m.start()])
        labels = {x.strip() for x in (w.group(3) or "").split(",")} if w else set()
        keeps_instance = w is not None and (
            (w.group(2) == "by" and "instance" in labels) or (w.group(2) == "without" and "instance" not in labels))
        if w is None:
            problems.append(f"{where}: {m.group(1)} is not reduced with max by (...) across instances: {e}")
        elif keeps_instance and re.search(r"\bsum\b", e):
            problems.append(f"{where}: {m.group(1)} is summed across instances: {e}")
for p in problems:
    print(p)
print(f"{seen} uses of database-wide gauges checked")
sys.exit(1 if problems or seen == 0 else 0)
PY
check "database-wide gauges are never summed across gateways" \
  python3 "$tmp/dbwide.py" "$dash" "$prom/brooq-rules.yml"
# The check itself must catch the mistake it exists for: a panel summing brooq_jobs.
sed 's/sum by (state) (max by (topic, state) (brooq_jobs\([^)]*\)))/sum by (state) (brooq_jobs\1)/' \
  "$dash" >"$tmp/summing-dashboard.json"
check "the gauge check fails on a panel that sums brooq_jobs" \
  bash -c '! grep -q "max by (topic, state) (brooq_jobs" "$1" && ! python3 "$2" "$1" "$3"' _ \
  "$tmp/summing-dashboard.json" "$tmp/dbwide.py" "$prom/brooq-rules.yml"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
