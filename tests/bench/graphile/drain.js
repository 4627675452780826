#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// graphile-worker's drain rate, to put beside brooq's drain_c8/drain_c32
// (tests/bench/run.sh). tests/bench/graphile.sh installs graphile-worker and runs this
// against a fresh cluster; by hand:
//   DATABASE_URL='postgres:///db?host=/sock/dir' node tests/bench/graphile/drain.js \
//     [--jobs N] [--concurrency C]          (or env JOBS, CONCURRENCY; argv wins)
// Env: GRAPHILE_DEPS, the folder whose node_modules holds graphile-worker (default
// <repo>/.deps/graphile: installed outside the work tree, which stays clean);
// PG_PID, the cluster's postmaster: adds PostgreSQL's CPU in the window; CLK_TCK.
// Prints one JSON line. Shaped like brooq's drain (tests/bench/util.c): the jobs are
// in the table, vacuumed, analyzed and checkpointed before the clock starts.
"use strict";
const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");
const { pathToFileURL } = require("url");

const arg = (name, env, def) => {
  const i = process.argv.indexOf(`--${name}`);
  const v = i > 0 ? process.argv[i + 1] : process.env[env] || String(def);
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) die(`--${name} / ${env}: not a positive integer: ${v}`);
  return n;
};
function die(msg) {
  console.error(`drain.js: ${msg}`);
  process.exit(1);
}

const JOBS = arg("jobs", "JOBS", 100000);
const CONCURRENCY = arg("concurrency", "CONCURRENCY", 32);
const DSN = process.env.DATABASE_URL || die("DATABASE_URL is not set");
const DEADLINE_MS = 300_000;
const CHUNK = 5000; // jobs per add_jobs call: one statement each, not 100k round trips
const deps = process.env.GRAPHILE_DEPS || path.resolve(__dirname, "../../../.deps/graphile");
const depRequire = createRequire(path.join(deps, "package.json"));

// CPU seconds of the cluster: the postmaster and its live children (backends,
// walwriter, checkpointer, autovacuum...) as tests/bench/util.c counts them, plus the
// postmaster's cutime+cstime: children that exited and were reaped meanwhile (util.c
// misses those). A live process's time is read from /proc/PID/schedstat (ns): the
// utime/stime of /proc/PID/stat are truncated to 10 ms ticks, and the runner opens
// its ~34 connections inside the window, so ticks would lose ~5 ms per backend.
const TCK = Number(process.env.CLK_TCK || 100);
const read = (file) => {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return null; // the process is gone
  }
};
// With it, the cluster's context switches (issue 30.5): voluntary (a wake-up each) and
// involuntary (preempted), from /proc/PID/status, as tests/bench/util.c counts brooq's.
function pgCpu(pm) {
  let sec = 0, vol = 0, invol = 0;
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    const s = read(`/proc/${d}/stat`);
    if (s === null) continue;
    // The command may hold spaces: fields start after its closing parenthesis.
    const f = s.slice(s.lastIndexOf(")") + 2).split(" "); // f[1] ppid, f[11..14] utime stime cutime cstime
    if (Number(d) !== pm && Number(f[1]) !== pm) continue;
    const ns = read(`/proc/${d}/schedstat`);
    sec += ns !== null ? Number(ns.split(" ")[0]) / 1e9 : (Number(f[11]) + Number(f[12])) / TCK;
    if (Number(d) === pm) sec += (Number(f[13]) + Number(f[14])) / TCK;
    const st = read(`/proc/${d}/status`) || "";
    vol += Number((st.match(/^voluntary_ctxt_switches:\s*(\d+)/m) || [0, 0])[1]);
    invol += Number((st.match(/^nonvoluntary_ctxt_switches:\s*(\d+)/m) || [0, 0])[1]);
  }
  return { sec, vol, invol };
}
// The machine's busy CPU seconds: what others used meanwhile (a shared 2-core box).
function busyCpu() {
  const f = fs.readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  return (f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] || 0)) / TCK; // all but idle, iowait
}

async function main() {
  // graphile-worker 0.18 is an ES module: import it by path from the deps folder.
  const gw = await import(pathToFileURL(depRequire.resolve("graphile-worker")).href);
  const { Client } = depRequire("pg"); // graphile-worker's own driver
  // Warnings and errors only: the default logger writes a line per job at info.
  const logger = new gw.Logger(() => (level, message) => {
    if (level === "error" || level === "warning") console.error(`graphile-worker ${level}: ${message}`);
  });

  // The schema and the backlog before the clock, like brooq's bench_db_fill.
  const utils = await gw.makeWorkerUtils({ connectionString: DSN, logger });
  await utils.migrate();
  for (let i = 0; i < JOBS; i += CHUNK) {
    const n = Math.min(CHUNK, JOBS - i);
    await utils.addJobs(Array.from({ length: n }, (_, k) => ({ identifier: "noop", payload: { i: i + k + 1 } })));
  }
  await utils.release();
  const db = new Client({ connectionString: DSN });
  await db.connect();
  const left = async () =>
    Number((await db.query("SELECT count(*) AS n FROM graphile_worker._private_jobs")).rows[0].n);
  if ((await left()) !== JOBS) die(`expected ${JOBS} jobs in the table after enqueue`);
  // Same starting state as brooq's drain: fresh statistics, no checkpoint pending.
  await db.query("VACUUM ANALYZE graphile_worker._private_jobs");
  await db.query("CHECKPOINT");

  let done = 0, firstAt = 0n, allRun;
  const ran = new Promise((resolve) => (allRun = resolve));
  const noop = async () => {
    if (done === 0) firstAt = process.hrtime.bigint();
    if (++done === JOBS) allRun();
  };
  const timer = setTimeout(() => die(`not done within ${DEADLINE_MS / 1000} s: ${done}/${JOBS} jobs ran`), DEADLINE_MS);

  const pm = Number(process.env.PG_PID || 0);
  const none = { sec: 0, vol: 0, invol: 0 };
  const pg0 = pm ? pgCpu(pm) : none, busy0 = busyCpu(), cpu0 = process.cpuUsage(), ru0 = process.resourceUsage();
  const t0 = process.hrtime.bigint();
  // Tuned as graphile-worker says for throughput: its performance docs run
  // localQueue 500 with completeJobBatchDelay and failJobBatchDelay 0; index.d.ts has the rest.
  const runner = await gw.run({
    connectionString: DSN,
    concurrency: CONCURRENCY,
    maxPoolSize: Math.max(10, CONCURRENCY + 2), // index.d.ts: "10 or concurrentJobs + 2, whichever is larger"
    noHandleSignals: true, // this script owns the process
    logger,
    taskList: { noop },
    parsedCronItems: [], // no cron: and no crontab file to look for
    preset: {
      worker: {
        localQueue: { size: 500 }, // fetch (and lock) 500 jobs per query, as in its performance docs
        completeJobBatchDelay: 0, // batch completions: one complete_jobs call per tick, not per job
        failJobBatchDelay: 0,
      },
    },
  });
  await ran;
  // Every task ran; completions are batched, so done means the table is empty.
  while ((await left()) !== 0) await new Promise((r) => setTimeout(r, 1));
  const t1 = process.hrtime.bigint();
  // Snapshots while the runner's connections are still open (their CPU is in them).
  const cpu = process.cpuUsage(cpu0), pg1 = pm ? pgCpu(pm) : none, busy1 = busyCpu(), ru1 = process.resourceUsage();
  clearTimeout(timer);
  await runner.stop();
  await runner.promise;
  const view = Number((await db.query("SELECT count(*) AS n FROM graphile_worker.jobs")).rows[0].n);
  await db.end();
  if (done !== JOBS || view !== 0) die(`ran ${done} tasks for ${JOBS} jobs; ${view} jobs left`);

  const sec = Number(t1 - t0) / 1e9, firstSec = Number(t1 - firstAt) / 1e9;
  const nodeCpu = (cpu.user + cpu.system) / 1e6;
  const out = {
    tool: "graphile-worker",
    version: JSON.parse(fs.readFileSync(path.join(path.dirname(depRequire.resolve("graphile-worker")), "../package.json"))).version,
    jobs: JOBS,
    concurrency: CONCURRENCY,
    // The rate from the first task's start to the empty table: the clock of brooq's
    // drain, which starts at the first handler start (tests/bench/gw.c); seconds counts
    // from the runner's start as well (its ~30 ms of start-up).
    jobs_per_s: Math.round(JOBS / firstSec),
    seconds: +sec.toFixed(3),
    seconds_from_first_job: +firstSec.toFixed(3),
    cpu_node_user_s: +(cpu.user / 1e6).toFixed(3),
    cpu_node_sys_s: +(cpu.system / 1e6).toFixed(3),
  };
  // Wake-ups per job: Node's whole process (its libuv threads too), PostgreSQL's.
  out.wakeups_node = +((ru1.voluntaryContextSwitches - ru0.voluntaryContextSwitches) / JOBS).toFixed(4);
  let invol = ru1.involuntaryContextSwitches - ru0.involuntaryContextSwitches;
  if (pm) {
    out.cpu_pg_s = +(pg1.sec - pg0.sec).toFixed(3);
    // Others' CPU meanwhile, % of a core (the machine is shared), like util.c's.
    out.cpu_other_pct = Math.max(0, Math.round(((busy1 - busy0) - (pg1.sec - pg0.sec) - nodeCpu) * 100 / sec));
    out.wakeups_pg = +((pg1.vol - pg0.vol) / JOBS).toFixed(4);
    invol += pg1.invol - pg0.invol;
  }
  out.preemptions = +(invol / JOBS).toFixed(4);
  console.log(JSON.stringify(out));
}

main().then(
  () => process.exit(0), // a stray pg timer must not keep us alive
  (e) => die(e && e.stack ? e.stack : String(e)),
);
