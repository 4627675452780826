# SPDX-License-Identifier: MIT
"""The Python package's suite: a real brooq-gateway on a fresh database of the harness
PostgreSQL (tests/pg.sh), as tests/support/gw.c starts one. Run by ctest
(python_test, tests/CMakeLists.txt) through tests/run.sh; it fails, never skips,
when something it needs is missing."""

import ctypes
import os
import secrets
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PGHOST = os.environ.get("BROOQ_TEST_PGHOST")
BIN_DIR = os.environ.get("BROOQ_TEST_BIN_DIR")
if not PGHOST or not BIN_DIR:
    raise RuntimeError("BROOQ_TEST_PGHOST and BROOQ_TEST_BIN_DIR must be set: run through tests/run.sh")

# Settings that make the cases quick: fast backoff, a reaper every 100 ms, an attempt
# timeout of 500 ms on one topic.
GW_ENV = {
    "BROOQ_HTTP_LISTEN": "off",
    "BROOQ_LOG_LEVEL": "info",
    "BROOQ_POOL_SIZE": "4",
    "BROOQ_SHUTDOWN_GRACE": "5s",
    "BROOQ_BACKOFF_BASE": "50ms",
    "BROOQ_BACKOFF_MAX": "200ms",
    "BROOQ_REAPER_INTERVAL": "100ms",
    "BROOQ_TOPIC_OVERRIDES": "py.timeout:attempt_timeout=500ms",
}


def psql(sql):
    subprocess.run(["psql", "-h", PGHOST, "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1",
                    "-qc", sql], check=True, stdout=subprocess.DEVNULL)


def _die_with_parent():
    # The gateway ends with the test run, whatever happens to it (gw.c does the same).
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def wait_for(fn, timeout=30.0, what="condition"):
    """Polls fn until it returns something true; that value. Fails after timeout s."""
    until = time.monotonic() + timeout
    last = None
    while time.monotonic() < until:
        last = fn()
        if last:
            return last
        time.sleep(0.02)
    pytest.fail("timed out after %.0f s waiting for %s (last: %r)" % (timeout, what, last))


class Gateway:
    def __init__(self, d):
        self.dir = str(d)
        self.url = "ipc://%s/gw.sock" % self.dir
        self.worker_token_file = os.path.join(self.dir, "worker-token")
        self.admin_token_file = os.path.join(self.dir, "admin-token")
        for f in (self.worker_token_file, self.admin_token_file):
            with open(f, "w") as fh:
                fh.write(secrets.token_hex(32) + "\n")
            os.chmod(f, 0o600)
        self.log = os.path.join(self.dir, "gateway.log")
        self.db = "py_%d_%s" % (os.getpid(), secrets.token_hex(3))
        self.proc = None

    def start(self):
        psql("CREATE DATABASE %s TEMPLATE brooq_template" % self.db)
        env = dict(GW_ENV)
        env.update({
            "BROOQ_DSN": "host=%s user=postgres dbname=%s" % (PGHOST, self.db),
            "BROOQ_LISTEN": self.url,
            "BROOQ_WORKER_TOKEN_FILES": self.worker_token_file,
            "BROOQ_ADMIN_TOKEN_FILES": self.admin_token_file,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        })
        for k in ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"):
            if k in os.environ:
                env[k] = os.environ[k]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([os.path.join(BIN_DIR, "brooq-gateway")], env=env, stdout=log,
                                         stderr=log, preexec_fn=_die_with_parent)
        import brooq

        def answers():
            if self.proc.poll() is not None:
                pytest.fail("brooq-gateway exited: %s" % open(self.log).read()[-3000:])
            try:
                with brooq.Client(self.url, self.worker_token_file, timeout=2) as c:
                    return c.ping()
            except brooq.Error:
                return None

        wait_for(answers, 60, "the gateway to answer ping")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(60)
        psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.db)


@pytest.fixture(scope="session")
def gw(tmp_path_factory):
    g = Gateway(tmp_path_factory.mktemp("gw"))
    g.start()
    yield g
    g.stop()


@pytest.fixture
def admin(gw):
    import brooq

    with brooq.Client(gw.url, gw.admin_token_file) as c:
        yield c


@pytest.fixture
def producer(gw):
    import brooq

    with brooq.Client(gw.url, gw.worker_token_file) as c:
        yield c


@pytest.fixture
def run_worker(gw):
    """Starts brooq.Worker objects on threads (signals off); stops and joins them at
    the end of the test. Returns start(worker) -> thread."""
    import threading

    started = []

    def start(w):
        errors = []

        def body():
            try:
                w.run(signals=False)
            except BaseException as e:  # noqa: B902 - reported by the test
                errors.append(e)

        t = threading.Thread(target=body, daemon=True)
        t.errors = errors
        t.start()
        started.append((w, t))
        return t

    yield start
    for w, t in started:
        w.stop()
    for w, t in started:
        t.join(60)
        assert not t.is_alive(), "a worker did not stop within 60 s"
        assert not t.errors, "worker.run raised: %r" % t.errors


def worker_proc(gw, *args):
    """Runs tests/python/worker_proc.py in a process of its own (for signals and kills)."""
    env = dict(os.environ)
    return subprocess.Popen([sys.executable, os.path.join(HERE, "worker_proc.py"), gw.url,
                             gw.worker_token_file] + [str(a) for a in args], env=env,
                            preexec_fn=_die_with_parent)
