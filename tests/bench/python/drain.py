#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issue 29's Python comparison: a no-op drain and enqueue->start latency for the brooq
Python worker (client/python), Celery 5 on Redis and RQ on Redis, on this machine.
The C worker's drain is brooq-bench's drain scenario (tests/bench/run.sh --only drain),
run beside this against the same gateway settings.

  drain.py brooq  --url URL --token-file F [--jobs N] [--concurrency C] [--latency M]
  drain.py celery --redis unix:///path/redis.sock [--pool prefork|threads] [...]
  drain.py rq     --redis unix:///path/redis.sock [...]

  drain   N jobs enqueued first (batches), then a worker of C started: jobs/s from the
          worker's start to the last job's end (handlers count in shared memory / Redis).
  latency M jobs enqueued one at a time against an idle running worker, each carrying
          its enqueue time: p50/p99 of start - enqueue, in ms.
Prints one JSON line per figure. redis-server is the caller's (run_python.sh starts one)."""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def emit(system, scenario, **kw):
    print(json.dumps(dict(system=system, scenario=scenario, **kw)), flush=True)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


# ---- brooq (Python worker on libbrooq-client) ---------------------------------------------

def bench_brooq(a):
    import brooq

    c = brooq.Client(a.url, a.token_file)
    for i in range(0, a.jobs, 1000):
        c.enqueue_many([{"topic": "bench.py", "payload": {}}] * min(1000, a.jobs - i))
    done = [0]
    lock = threading.Lock()
    w = brooq.Worker(client=c, concurrency=a.concurrency)
    t_end = [0.0]

    @w.handler("bench.py")
    def noop(job):
        with lock:
            done[0] += 1
            if done[0] == a.jobs:
                t_end[0] = time.monotonic()
                w.stop()

    t0 = time.monotonic()
    w.run(signals=False)
    emit("brooq-python", "drain", jobs=a.jobs, concurrency=a.concurrency,
         jobs_per_s=round(a.jobs / (t_end[0] - t0), 1))
    if a.latency:
        lat = []
        got = threading.Event()
        w2 = brooq.Worker(a.url, a.token_file, concurrency=a.concurrency)

        @w2.handler("bench.py.lat")
        def lat_h(job):
            lat.append((time.time() - job.payload["t"]) * 1000)
            got.set()

        t = threading.Thread(target=w2.run, kwargs={"signals": False})
        t.start()
        time.sleep(0.5)  # the worker's first long-poll is parked
        for _ in range(a.latency):
            got.clear()
            c.enqueue("bench.py.lat", {"t": time.time()})
            got.wait(30)
        w2.stop()
        t.join()
        emit("brooq-python", "latency", n=len(lat), p50_ms=round(pct(lat, 50), 2), p99_ms=round(pct(lat, 99), 2))
    c.close()


# ---- Celery / RQ on Redis --------------------------------------------------------------

def redis_client(url):
    import redis

    return redis.Redis.from_url(url)


def wait_count(r, key, n, timeout=600):
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        v = int(r.get(key) or 0)
        if v >= n:
            return time.monotonic()
        time.sleep(0.005)
    raise SystemExit("%s: only %s of %d after %d s" % (key, r.get(key), n, timeout))


def bench_celery(a):
    sys.path.insert(0, HERE)
    os.environ["BENCH_REDIS"] = a.redis
    import celery_tasks

    r = redis_client(a.redis)
    r.flushdb()
    for _ in range(a.jobs):
        celery_tasks.noop.delay()
    env = dict(os.environ, PYTHONPATH=HERE)
    cmd = [sys.executable, "-m", "celery", "-A", "celery_tasks", "worker", "-c", str(a.concurrency),
           "--pool", a.pool, "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, cwd=HERE)
    try:
        t1 = wait_count(r, "bench:done", a.jobs)
        emit("celery-redis-" + a.pool, "drain", jobs=a.jobs, concurrency=a.concurrency,
             jobs_per_s=round(a.jobs / (t1 - t0), 1), note="includes worker start-up")
        if a.latency:
            lat = []
            for _ in range(a.latency):
                before = int(r.get("bench:lat_n") or 0)
                celery_tasks.lat.delay(time.time())
                wait_count(r, "bench:lat_n", before + 1, 30)
            lat = [float(x) for x in r.lrange("bench:lat", 0, -1)]
            emit("celery-redis-" + a.pool, "latency", n=len(lat), p50_ms=round(pct(lat, 50), 2),
                 p99_ms=round(pct(lat, 99), 2))
    finally:
        p.terminate()
        p.wait(60)


def bench_rq(a):
    sys.path.insert(0, HERE)
    import rq_tasks
    from rq import Queue

    r = redis_client(a.redis)
    r.flushdb()
    q = Queue("bench", connection=r)
    for i in range(0, a.jobs, 500):
        q.enqueue_many([Queue.prepare_data(rq_tasks.noop) for _ in range(min(500, a.jobs - i))])
    env = dict(os.environ, PYTHONPATH=HERE, BENCH_REDIS=a.redis)
    cmd = [sys.executable, "-m", "rq.cli", "worker", "--url", a.redis, "-w", a.worker_class, "-q", "bench"]
    t0 = time.monotonic()
    ps = [subprocess.Popen(cmd, env=env, cwd=HERE, stdout=subprocess.DEVNULL) for _ in range(a.concurrency)]
    try:
        t1 = wait_count(r, "bench:done", a.jobs)
        emit("rq-redis", "drain", jobs=a.jobs, concurrency=a.concurrency, worker_class=a.worker_class,
             jobs_per_s=round(a.jobs / (t1 - t0), 1), note="includes worker start-up")
        if a.latency:
            for _ in range(a.latency):
                before = int(r.get("bench:lat_n") or 0)
                q.enqueue(rq_tasks.lat, time.time())
                wait_count(r, "bench:lat_n", before + 1, 30)
            lat = [float(x) for x in r.lrange("bench:lat", 0, -1)]
            emit("rq-redis", "latency", n=len(lat), p50_ms=round(pct(lat, 50), 2), p99_ms=round(pct(lat, 99), 2))
    finally:
        for p in ps:
            p.terminate()
        for p in ps:
            p.wait(60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("system", choices=["brooq", "celery", "rq"])
    ap.add_argument("--url")
    ap.add_argument("--token-file")
    ap.add_argument("--redis")
    ap.add_argument("--jobs", type=int, default=20000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--latency", type=int, default=200)
    ap.add_argument("--pool", default="prefork", choices=["prefork", "threads"])
    ap.add_argument("--worker-class", default="rq.Worker")
    a = ap.parse_args()
    {"brooq": bench_brooq, "celery": bench_celery, "rq": bench_rq}[a.system](a)


if __name__ == "__main__":
    main()
