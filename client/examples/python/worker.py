#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""example worker in Python for the demo.* topics (deploy/demo.sh): the same jobs as
client/examples/worker.c, on the brooq package (docs/python.md).

    BROOQ_URL=... BROOQ_TOKEN_FILE=... python3 client/examples/python/worker.py [--concurrency N]

SIGTERM or SIGINT (Ctrl-C) stops it gracefully: no more claims, running jobs finish.
"""

import argparse
import time

import brooq

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--url", help="default: $BROOQ_URL, else ipc:///run/brooq/gateway.sock")
ap.add_argument("--token-file", help="default: $BROOQ_TOKEN_FILE")
ap.add_argument("--concurrency", type=int, default=4)
args = ap.parse_args()

w = brooq.Worker(args.url, args.token_file, concurrency=args.concurrency)


@w.handler("demo.hello")
def hello(job):
    """Print the payload; the return value is the job's result (brooqctl job shows it)."""
    print("job=%d topic=demo.hello payload=%s" % (job.id, job.payload), flush=True)
    return {"printed": job.payload}


@w.handler("demo.flaky")
def flaky(job):
    """Fail on attempts 1 and 2 (the exception goes to last_error), done on the 3rd."""
    print("job=%d topic=demo.flaky attempt=%d" % (job.id, job.attempt), flush=True)
    if job.attempt < 3:
        raise RuntimeError("flaky: attempt %d fails on purpose" % job.attempt)
    return "third time lucky"


@w.handler("demo.slow")
def slow(job):
    """30 s of work in 100 ms steps, giving up as soon as the job is cancelled (an
    operator's cancel, its attempt timeout, ...): job.cancelled.reason says which."""
    print("job=%d topic=demo.slow started" % job.id, flush=True)
    t0 = time.monotonic()
    if job.cancelled.wait(30):
        print("job=%d topic=demo.slow canceled after %.1f s reason=%s"
              % (job.id, time.monotonic() - t0, job.cancelled.reason), flush=True)
        return None
    print("job=%d topic=demo.slow done" % job.id, flush=True)
    return None


@w.handler("demo.chain")
def chain(job):
    """Done, with one demo.hello job enqueued in the same transaction."""
    print("job=%d topic=demo.chain chained=demo.hello" % job.id, flush=True)
    return brooq.Done(chain=[{"topic": "demo.hello", "payload": {"parent": job.id}}])


if __name__ == "__main__":
    w.run()
