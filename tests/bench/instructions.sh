#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# PostgreSQL's instructions per drained job: a measure of the claim and settle statements'
# cost that does not move with the machine's load (docs/benchmarks.md, issue 15).
#
#   tests/bench/instructions.sh [--bin-dir DIR] [--migrations DIR] [--jobs N] [--enqueue] [--keys]
#                               [--spans [--span-topics N]]
#
# --enqueue counts the whole life of a job instead: its insert (100 rows a transaction),
# the drain, and the VACUUM that then removes the dead row versions and index entries
# (what autovacuum does in service) -- what an index written at enqueue or at the
# final settle costs (SPEC invariant 17, issue 28). --keys gives every job an
# idempotency key (as producers that deduplicate do). --spans (with --enqueue) adds the
# janitor's mapping of the jobs to their topics' spans of ids (migration 00015: the insert
# of BRQ_STMT_SPAN_MAP over the new ids, at most 262,144 a pass, as the janitor runs it
# after the inserts), so that the difference with and without is the spans' cost per job.
# --span-topics N maps the jobs as if they belonged to N topics taking turns (topic || id
# % N): every topic in every range, the most spans the same jobs can make.
#
# A private cluster gets the schema (brooqctl migrate up) and the exact claim and settle
# statements the gateway prepares (taken from the server log of one short raw drain of
# brooq-bench, so a build of an older tree can be measured the same way); they then run in
# a PL/pgSQL loop (claim 500, settle them in the next transaction) in `postgres --single`
# under callgrind, once with the drain and once without; the difference divided by the
# jobs is printed. Deterministic within ~0.01 % from run to run. Needs valgrind and python3
# (deploy/deps.sh installs both); takes about a minute.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin_dir='' migrations="$root/migrations" jobs=20000 enqueue=0 keys=0 spans=0 span_topics=1
while [ $# -gt 0 ]; do
  case $1 in
    --bin-dir) bin_dir=$2; shift ;;
    --migrations) migrations=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --enqueue) enqueue=1 ;;
    --keys) keys=1 ;;
    --spans) spans=1 ;;
    --span-topics) span_topics=$2; shift ;;
    *) echo "usage: $0 [--bin-dir DIR] [--migrations DIR] [--jobs N] [--enqueue] [--keys] [--spans [--span-topics N]]" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$bin_dir" ]; then
  "$root/deploy/deps.sh"
  cmake -S "$root" -B "$root/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/build-bench" -j "$(nproc)" --target brooqctl brooq-bench >/dev/null
  bin_dir="$root/build-bench/bin"
fi
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is not installed (deploy/deps.sh)" >&2; exit 1; }

# shellcheck source=tests/pg.sh
. "$root/tests/pg.sh"
work=$(mktemp -d /tmp/brooq-instr.XXXXXX)
chmod 755 "$work"
trap 'brq_pg_stop "$work" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
brq_pg_start "$work"
pg() { psql -X -qAt -h "$BROOQ_TEST_PGHOST" -U postgres "$@"; }
pg -d postgres -c 'CREATE DATABASE instr' -c "ALTER SYSTEM SET log_statement = 'all'" \
  -c 'SELECT pg_reload_conf()' >/dev/null
dsn="host=$BROOQ_TEST_PGHOST user=postgres dbname=instr"
BROOQ_DSN=$dsn "$bin_dir/brooqctl" migrate up --dir "$migrations" >/dev/null
BROOQ_BENCH_DSN=$dsn BROOQ_BENCH_PG_PID=$(head -n 1 "$work/data/postmaster.pid") \
  "$bin_dir/brooq-bench" raw-drain --run 1 --jobs 1000 --procs 1 --threads 16 --out "$work/raw.jsonl" \
  >"$work/raw.log" 2>&1 || { cat "$work/raw.log" >&2; exit 1; }

# The statements as the server saw them, and a loop around them.
python3 - "$work/server.log" "$work/drain.sql" <<'PY'
import re, sys
log = open(sys.argv[1]).read()
def first(name):
    m = re.search(r'execute (brq_%s[a-z_]*): (.*)' % name, log)
    if not m:
        sys.exit('instructions.sh: no %s statement in the server log' % name)
    return m.group(1), m.group(2).strip()
_, claim = first('claim')
settle_name, settle = first('settle')
# The claim's RETURNING columns, named: the row address is `j.ctid` when there is one
# (no longer the last column since the claim returns the wait too).
ret = claim[claim.rindex('RETURNING') + len('RETURNING'):]
parts = [p.strip() for p in re.split(r',(?![^()]*\))', ret)]
has_loc = 'j.ctid' in parts
cols = ['c%d' % i for i in range(len(parts))]
cols[0], cols[5] = 'id', 'k'
if has_loc:
    cols[parts.index('j.ctid')] = 'loc'
def sub(sql, m):
    for k in sorted(m, key=len, reverse=True):
        sql = sql.replace(k, m[k])
    return sql
claim = sub(claim, {'$1': 'p_topics', '$2': 'p_n', '$3': 'p_worker', '$4': 'p_tokens', '$5': 'p_lease'})
params = {'$1': 'ids', '$2': 'toks', '$3': 'outs', '$4': 'errs', '$5': 'delays'}
if settle_name == 'brq_settle_at':
    params.update({'$6': 'locs', '$7': 'results'})
elif '$6' in settle:
    params['$6'] = 'results'
settle = sub(settle, params)
loc_agg, loc_into = (', array_agg(cl.loc)', ', locs') if has_loc else ('', '')
body = f"""CREATE PROCEDURE instr_drain(batch int) LANGUAGE plpgsql AS $P$
DECLARE
  p_topics text[] := '{{bench.drain}}'; p_n int8 := batch; p_worker text := 'bench'; p_lease int8 := NULL;
  p_tokens uuid[]; ids int8[]; toks uuid[]; locs tid[]; outs text[]; errs text[]; delays int8[];
  results jsonb[] := NULL; got int;
BEGIN
  LOOP
    p_tokens := ARRAY(SELECT gen_random_uuid() FROM generate_series(1, batch));
    WITH cl({', '.join(cols)}) AS ({claim})
    SELECT array_agg(cl.id), array_agg(p_tokens[cl.k]){loc_agg} INTO ids, toks{loc_into} FROM cl;
    COMMIT;
    EXIT WHEN ids IS NULL;
    got := cardinality(ids);
    outs := array_fill('done'::text, ARRAY[got]);
    errs := array_fill(NULL::text, ARRAY[got]);
    delays := array_fill(0::int8, ARRAY[got]);
    WITH st AS ({settle}) SELECT count(*) INTO got FROM st;
    COMMIT;
  END LOOP;
END $P$;"""
open(sys.argv[2], 'w').write(body)
PY
key=NULL
[ "$keys" -eq 1 ] && key="'k' || g"
# The jobs, in transactions of 100 rows: the setup's part, or with --enqueue the measured one.
cat >"$work/enqueue.sql" <<EOF
CREATE PROCEDURE instr_enqueue(n int) LANGUAGE plpgsql AS \$P\$
BEGIN
  FOR b IN 0 .. (n - 1) / 100 LOOP
    INSERT INTO job (topic, payload, idempotency_key)
      SELECT 'bench.drain', '{}', $key FROM generate_series(b * 100 + 1, least(n, b * 100 + 100)) g;
    COMMIT;
  END LOOP;
END \$P\$;
EOF
pg -d instr -f "$work/drain.sql" >/dev/null
pg -d instr -f "$work/enqueue.sql" >/dev/null
pg -d postgres -c 'ALTER SYSTEM RESET log_statement' >/dev/null
brq_pg_stop "$work" fast >/dev/null

if [ "$enqueue" -eq 1 ]; then
  # Measured: enqueue, drain, vacuum. The base: the same session on the empty table.
  printf 'TRUNCATE job;\nSELECT setval('"'"'job_id_seq'"'"', 1, false);\nVACUUM ANALYZE job;\nCHECKPOINT;\n' >"$work/setup.sql"
  span_map=''
  if [ "$spans" -eq 1 ]; then
    for ((lo = 0; lo < jobs; lo += 262144)); do
      topic_expr=j.topic
      [ "$span_topics" -gt 1 ] && topic_expr="j.topic || (j.id % $span_topics)"
      span_map+="INSERT INTO job_topic_span (topic, bucket) SELECT d.t, d.b FROM (SELECT DISTINCT $topic_expr AS t,"
      span_map+=" j.id >> 10 AS b FROM (SELECT topic, id FROM job WHERE id > $lo AND id <= $((lo + 262144))) j) d"
      span_map+=" WHERE d.b > $lo >> 10 OR NOT EXISTS (SELECT 1 FROM job_topic_span s WHERE s.topic = d.t"
      span_map+=" AND s.bucket = d.b);"$'\n'
    done
    printf 'TRUNCATE job_topic_span;\n' >>"$work/setup.sql"
  fi
  { cat "$work/setup.sql"; echo "CALL instr_enqueue($jobs);"; echo "ANALYZE job;"; printf '%s' "$span_map"
    echo "CALL instr_drain(500);"
    echo "VACUUM job;"; echo "SELECT count(*) = $jobs AS all_done FROM job WHERE state = 'done';"; } >"$work/run.sql"
  what="enqueued, drained and vacuumed job"
else
  { printf 'TRUNCATE job;\nCALL instr_enqueue(%d);\nVACUUM ANALYZE job;\nCHECKPOINT;\n' "$jobs"; } >"$work/setup.sql"
  { cat "$work/setup.sql"; echo "CALL instr_drain(500);"; echo "SELECT count(*) = $jobs AS all_done FROM job WHERE state = 'done';"; } >"$work/run.sql"
  what="drained job"
fi
chmod 644 "$work"/*.sql
# count SCRIPT: instructions of one single-user session running SCRIPT.
count() {
  brq_pg_as_owner valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$(brq_pg_bindir)/postgres" --single -D "$work/data" instr <"$1" >"$work/single.log" 2>&1
  grep -q 'all_done = "f"' "$work/single.log" && { echo "instructions.sh: the drain left jobs undone" >&2; exit 1; }
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/single.log"
}
base=$(count "$work/setup.sql")
total=$(count "$work/run.sql")
[ -n "$base" ] && [ -n "$total" ] || { cat "$work/single.log" >&2; exit 1; }
echo "PostgreSQL instructions per $what: $(((total - base) / jobs)) ($jobs jobs, settle statement $(grep -o 'brq_settle[a-z_]*' "$work/server.log" | head -n 1))"
