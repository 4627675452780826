# SPDX-License-Identifier: MIT
"""The RQ side of drain.py: a no-op job and a latency probe, counting in Redis."""
import os
import time

import redis

_r = redis.Redis.from_url(os.environ.get("BENCH_REDIS", "redis://localhost"))


def noop():
    _r.incr("bench:done")


def lat(t):
    _r.rpush("bench:lat", (time.time() - t) * 1000)
    _r.incr("bench:lat_n")
