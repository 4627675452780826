# SPDX-License-Identifier: MIT
"""A worker in a process of its own, for the cases that signal or kill it.
Usage: worker_proc.py URL TOKEN_FILE batch LOG   (py.batch: 0.3 s jobs, logged; SIGTERM drains)
       worker_proc.py URL TOKEN_FILE kill        (py.kill: the handler SIGKILLs its process)"""

import os
import signal
import sys
import time

import brooq

url, token_file, mode = sys.argv[1:4]

if mode == "batch":
    logpath = sys.argv[4]
    w = brooq.Worker(url, token_file, concurrency=4, stop_grace=30)

    def note(*words):
        line = " ".join(str(x) for x in words) + "\n"
        fd = os.open(logpath, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(fd, line.encode())  # one write(2) per line: O_APPEND keeps lines whole
        os.close(fd)

    @w.handler("py.batch")
    def batch(job):
        note("start", job.id, os.getpid(), time.time())
        time.sleep(0.3)
        note("end", job.id, os.getpid(), time.time())
        return job.id

    w.run()
    note("exited", 0, os.getpid(), time.time())
elif mode == "kill":
    w = brooq.Worker(url, token_file, concurrency=1, lease=1.0)

    @w.handler("py.kill")
    def kill(job):
        os.kill(os.getpid(), signal.SIGKILL)

    w.run()
else:
    sys.exit("unknown mode " + mode)
