# SPDX-License-Identifier: MIT
"""The Celery side of drain.py: a no-op task and a latency probe, counting in Redis."""
import os
import time

import redis
from celery import Celery

URL = os.environ["BENCH_REDIS"]
# kombu names a Unix socket redis+socket://, redis-py unix://.
app = Celery("bench", broker=URL.replace("unix://", "redis+socket://", 1))
app.conf.update(task_ignore_result=True, worker_prefetch_multiplier=4, task_acks_late=False,
                broker_connection_retry_on_startup=True)
_r = redis.Redis.from_url(URL)


@app.task
def noop():
    _r.incr("bench:done")


@app.task
def lat(t):
    _r.rpush("bench:lat", (time.time() - t) * 1000)
    _r.incr("bench:lat_n")
