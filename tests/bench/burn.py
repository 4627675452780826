#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Another process keeping one core half busy (issue 30.5: the drains under contention).

    tests/bench/burn.py [--cpu N] [--duty F] [--period-ms P]

Pinned to core N (default: the last), it spins for duty x period, then sleeps for the
rest of the period (default 0.5 x 10 ms), until it is ended (SIGTERM or SIGINT). A
period of 10 ms is shorter than the scheduler's slices, so what it takes is spread
over the run as a build's compiler processes would take it, not in long blocks.
"""
import argparse
import os
import signal
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1)
    ap.add_argument("--duty", type=float, default=0.5)
    ap.add_argument("--period-ms", type=float, default=10.0)
    a = ap.parse_args()
    if not 0 < a.duty <= 1 or a.period_ms <= 0:
        print("burn.py: --duty is in (0, 1], --period-ms above 0", file=sys.stderr)
        return 2
    os.sched_setaffinity(0, {a.cpu})
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    period = a.period_ms / 1000
    spin, rest = period * a.duty, period * (1 - a.duty)
    try:
        while True:
            end = time.perf_counter() + spin
            while time.perf_counter() < end:
                pass
            if rest > 0:
                time.sleep(rest)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
