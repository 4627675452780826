# SPDX-License-Identifier: MIT
"""brooq (client/python) against a real gateway and PostgreSQL: producing, every
handler outcome, cancellation, timeouts, asyncio, a SIGTERMed and a killed worker."""

import asyncio
import os
import signal
import threading

import pytest

import brooq
from conftest import wait_for, worker_proc


def state_of(c, job_id, *states):
    j = c.job(job_id)
    return j if j["state"] in states else None


def new_worker(gw, **kw):
    kw.setdefault("concurrency", 4)
    return brooq.Worker(gw.url, gw.worker_token_file, **kw)


# ---- producer --------------------------------------------------------------------------------


def test_enqueue_job_and_idempotency_key(producer):
    a = producer.enqueue("py.produce", {"n": 1, "s": "é"}, key="k-1", priority=3, max_attempts=7)
    assert a.created and a.id > 0
    b = producer.enqueue("py.produce", {"n": 2}, key="k-1")
    assert b == (a.id, False)
    j = producer.job(a.id)
    assert j["payload"] == {"n": 1, "s": "é"}
    assert (j["topic"], j["state"], j["key"], j["priority"], j["max_attempts"]) == ("py.produce", "pending", "k-1", 3, 7)
    assert j["created_at"].tzinfo is not None
    many = producer.enqueue_many([{"topic": "py.produce", "payload": [i]} for i in range(5)])
    assert [m.created for m in many] == [True] * 5
    assert len({m.id for m in many}) == 5
    later = producer.enqueue("py.produce", None, delay=3600)
    assert producer.job(later.id)["available_at"] > j["created_at"]


def test_errors_are_exceptions_with_the_protocols_code(gw, producer, admin, tmp_path):
    with pytest.raises(brooq.NotFound):
        producer.job(10**12)
    with pytest.raises(brooq.InvalidArgument):
        producer.enqueue("Not A Topic", {})
    with pytest.raises(TypeError):
        producer.enqueue("py.err", {1, 2})  # not JSON-serialisable: json.dumps says so
    with pytest.raises(brooq.PermissionDenied):
        producer.cancel(producer.enqueue("py.err", {}).id)  # cancel needs an admin token
    bad = tmp_path / "bad-token"
    bad.write_text("0" * 64 + "\n")
    bad.chmod(0o600)
    with brooq.Client(gw.url, str(bad)) as c:
        with pytest.raises(brooq.Unauthenticated):
            c.enqueue("py.err", {})
    with brooq.Client("ipc://%s/nothing.sock" % tmp_path, gw.worker_token_file, timeout=2) as c:
        with pytest.raises(brooq.Unavailable):  # ConnectFailed is an Unavailable
            c.ping()
    with pytest.raises(brooq.Conflict):
        admin.retry(producer.enqueue("py.err", {}).id)  # pending: nothing to retry


def test_env_defaults_list_cancel_and_retry(gw, admin, monkeypatch):
    monkeypatch.setenv("BROOQ_URL", gw.url)
    monkeypatch.setenv("BROOQ_TOKEN_FILE", gw.admin_token_file)
    with brooq.Client() as c:
        ids = [c.enqueue("py.list", {"i": i}).id for i in range(3)]
        page = c.list(topic="py.list", limit=2)
        assert [j["id"] for j in page.jobs] == ids[::-1][:2]
        rest = c.list(topic="py.list", limit=2, cursor=page.next)
        assert [j["id"] for j in rest.jobs] == [ids[0]] and rest.next is None
        assert c.cancel(ids[0]) == ("canceled", True)
        assert c.list(topic="py.list", state="canceled").jobs[0]["id"] == ids[0]
        r = c.retry(ids[0])
        assert r.created and c.job(r.id)["retry_of"] == ids[0]
        assert c.retry(ids[0]) == (r.id, False)


def test_async_client(gw):
    async def main():
        async with brooq.AsyncClient(gw.url, gw.admin_token_file) as c:
            e = await c.enqueue("py.aclient", {"a": 1})
            j = await c.job(e.id)
            many = await c.enqueue_many([{"topic": "py.aclient"}] * 3)
            return e, j, many

    e, j, many = asyncio.run(main())
    assert e.created and j["payload"] == {"a": 1} and len(many) == 3


# ---- worker ----------------------------------------------------------------------------------


def test_produce_and_consume_stores_results(gw, producer, run_worker):
    w = new_worker(gw, concurrency=8)
    seen = {}

    @w.handler("py.double")
    def double(job):
        seen[job.id] = (job.topic, job.attempt, job.max_attempts, job.deadline, job.cancelled.is_set())
        return {"double": job.payload["n"] * 2}

    ids = [e.id for e in producer.enqueue_many([{"topic": "py.double", "payload": {"n": i}} for i in range(50)])]
    run_worker(w)
    for i, jid in enumerate(ids):
        j = wait_for(lambda: state_of(producer, jid, "done"), what="job %d done" % jid)
        assert j["result"] == {"double": 2 * i}
    assert seen[ids[0]] == ("py.double", 1, 5, None, False)


def test_done_with_chained_jobs(gw, producer, run_worker):
    w = new_worker(gw)

    @w.handler("py.parent")
    def parent(job):
        return brooq.Done({"children": 2}, chain=[{"topic": "py.child", "payload": {"parent": job.id, "i": i}}
                                                  for i in range(2)])

    @w.handler("py.child")
    def child(job):
        return job.payload

    jid = producer.enqueue("py.parent", {}).id
    run_worker(w)
    assert wait_for(lambda: state_of(producer, jid, "done"))["result"] == {"children": 2}
    with brooq.Client(gw.url, gw.admin_token_file) as a:
        kids = wait_for(lambda: [j for j in a.list(topic="py.child").jobs if j["state"] == "done"]
                        if len(a.list(topic="py.child", state="done").jobs) == 2 else None)
    assert sorted(k["result"]["i"] for k in kids) == [0, 1]
    assert {k["result"]["parent"] for k in kids} == {jid}


def test_a_raising_handler_records_type_message_and_traceback(gw, producer, run_worker):
    w = new_worker(gw)

    def inner(n):
        raise ValueError("bad input %d" % n)

    @w.handler("py.raise")
    def raising(job):
        inner(job.payload["n"])

    jid = producer.enqueue("py.raise", {"n": 42}, max_attempts=1).id
    run_worker(w)
    j = wait_for(lambda: state_of(producer, jid, "dead"), what="the job dead")
    err = j["last_error"]
    assert err.startswith("ValueError: bad input 42\nTraceback"), err
    assert "test_brooq.py" in err and "in inner" in err and "in raising" in err, err
    # The attempt's error is kept by attempt too (brooq_job_info.errors).
    assert [(e["attempt"], e["error"]) for e in j["errors"]] == [(1, err)], j["errors"]
    assert j["errors"][0]["at"] is not None


def test_retry_cancel_and_preserve(gw, producer, run_worker):
    w = new_worker(gw)
    calls = {}

    @w.handler("py.outcome")
    def outcome(job):
        calls.setdefault(job.id, []).append(job.attempt)
        kind = job.payload["kind"]
        if kind == "retry" and job.attempt == 1:
            raise brooq.Retry(delay=0.1)
        if kind == "cancel":
            raise brooq.Cancel("not needed any more")
        if kind == "preserve" and len(calls[job.id]) == 1:
            raise brooq.Preserve("dependency down")
        return kind

    r = producer.enqueue("py.outcome", {"kind": "retry"}).id
    c = producer.enqueue("py.outcome", {"kind": "cancel"}).id
    p = producer.enqueue("py.outcome", {"kind": "preserve"}).id
    run_worker(w)
    jr = wait_for(lambda: state_of(producer, r, "done"))
    assert (jr["attempts"], jr["result"], calls[r]) == (2, "retry", [1, 2])
    jc = wait_for(lambda: state_of(producer, c, "canceled"))
    assert jc["last_error"] == "not needed any more"
    jp = wait_for(lambda: state_of(producer, p, "done"))
    # The preserved attempt was given back: both runs were attempt 1.
    assert (jp["attempts"], calls[p], jp["last_error"]) == (1, [1, 1], "dependency down")


def test_an_operator_cancel_sets_the_cancelled_event_with_its_reason(gw, producer, admin, run_worker):
    w = new_worker(gw)
    got = {}
    started = threading.Event()

    @w.handler("py.opcancel")
    def slow(job):
        started.set()
        got["set"] = job.cancelled.wait(60)
        got["reason"] = job.cancelled.reason
        return "discarded"

    jid = producer.enqueue("py.opcancel", {}).id
    run_worker(w)
    assert started.wait(30)
    assert admin.cancel(jid) == ("canceled", True)
    wait_for(lambda: "reason" in got, what="the handler to see its cancel")
    assert got == {"set": True, "reason": "operator"}
    assert producer.job(jid)["state"] == "canceled"


def test_an_attempt_past_its_timeout_is_cancelled_and_failed(gw, producer, run_worker):
    w = new_worker(gw)
    got = {}

    @w.handler("py.timeout")
    def hang(job):
        got["deadline"] = job.deadline
        got["set"] = job.cancelled.wait(60)
        got["reason"] = job.cancelled.reason
        return "too late"

    jid = producer.enqueue("py.timeout", {}, max_attempts=1).id
    run_worker(w)
    j = wait_for(lambda: state_of(producer, jid, "dead"), what="the timed-out job dead")
    assert got["set"] and got["reason"] == "timeout" and got["deadline"] is not None
    assert j["last_error"].startswith("attempt timed out after 500 ms"), j["last_error"]
    assert j["result"] is None


def test_async_handlers_run_on_the_loop_and_hear_cancels(gw, producer, admin, run_worker):
    w = new_worker(gw, concurrency=16)
    loops = set()
    got = {}

    @w.handler("py.async")
    async def ahandler(job):
        loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(0.01)
        return {"n": job.payload["n"]}

    @w.handler("py.async.cancel")
    async def awaits_cancel(job):
        await asyncio.wait_for(job.cancelled.wait_async(), 60)
        got["reason"] = job.cancelled.reason

    @w.handler("py.async.sync")
    def plain(job):  # a plain handler beside async ones runs on the loop's executor
        return threading.current_thread() is not threading.main_thread()

    ids = [e.id for e in producer.enqueue_many([{"topic": "py.async", "payload": {"n": i}} for i in range(40)])]
    s = producer.enqueue("py.async.sync", {}).id
    run_worker(w)
    for i, jid in enumerate(ids):
        assert wait_for(lambda: state_of(producer, jid, "done"))["result"] == {"n": i}
    assert len(loops) == 1
    assert wait_for(lambda: state_of(producer, s, "done"))["result"] is True
    c = producer.enqueue("py.async.cancel", {}).id
    wait_for(lambda: state_of(producer, c, "processing"))
    admin.cancel(c)
    wait_for(lambda: "reason" in got, what="the async handler to see its cancel")
    assert got["reason"] == "operator"


def test_sigterm_mid_batch_loses_nothing_and_runs_nothing_twice(gw, producer, run_worker, tmp_path):
    logpath = str(tmp_path / "batch.log")
    ids = [e.id for e in producer.enqueue_many([{"topic": "py.batch", "payload": {}}] * 40)]
    p = worker_proc(gw, "batch", logpath)

    def lines():
        try:
            return [ln.split() for ln in open(logpath)]
        except FileNotFoundError:
            return []

    wait_for(lambda: sum(ln[0] == "start" for ln in lines()) >= 4, what="4 handlers started")
    p.send_signal(signal.SIGTERM)
    assert p.wait(60) == 0
    first = lines()
    assert first[-1][0] == "exited"
    started = [int(ln[1]) for ln in first if ln[0] == "start"]
    ended = [int(ln[1]) for ln in first if ln[0] == "end"]
    assert sorted(started) == sorted(ended), "a handler was cut off by the drain"
    assert len(started) < 40, "the whole batch ran before the signal: the case proves nothing"
    # The rest was given back at once: another worker runs it.
    w = new_worker(gw)
    again = []

    @w.handler("py.batch")
    def batch(job):
        again.append(job.id)
        return job.id

    run_worker(w)
    for jid in ids:
        j = wait_for(lambda: state_of(producer, jid, "done"), what="job %d done" % jid)
        assert j["attempts"] == 1, "job %d ran %d times" % (jid, j["attempts"])
    assert sorted(started + again) == sorted(ids)


def test_a_handler_that_kills_its_process_returns_via_the_reaper(gw, producer, run_worker):
    jid = producer.enqueue("py.kill", {}).id
    p = worker_proc(gw, "kill")
    assert p.wait(60) == -signal.SIGKILL
    assert producer.job(jid)["state"] == "processing"
    w = new_worker(gw)

    @w.handler("py.kill")
    def survive(job):
        return {"attempt": job.attempt}

    run_worker(w)
    j = wait_for(lambda: state_of(producer, jid, "done"), what="the job back via the reaper and done")
    assert j["result"] == {"attempt": 2} and j["lost_leases"] == 1


def test_the_example_worker_runs_the_demo_jobs(gw, producer, admin):
    import subprocess
    import sys

    example = os.path.join(os.environ["BROOQ_SOURCE_DIR"], "client/examples/python/worker.py")
    env = dict(os.environ, BROOQ_URL=gw.url, BROOQ_TOKEN_FILE=gw.worker_token_file)
    hello = producer.enqueue("demo.hello", {"greeting": "hello, brooq"}).id
    flaky = producer.enqueue("demo.flaky", {}).id
    chain = producer.enqueue("demo.chain", {}).id
    slow = producer.enqueue("demo.slow", {}).id
    p = subprocess.Popen([sys.executable, example, "--concurrency", "4"], env=env, stdout=subprocess.PIPE, text=True)
    out = []
    reader = threading.Thread(target=lambda: out.extend(p.stdout), daemon=True)
    reader.start()
    try:
        assert wait_for(lambda: state_of(producer, hello, "done"))["result"] == {"printed": {"greeting": "hello, brooq"}}
        f = wait_for(lambda: state_of(producer, flaky, "done"))
        assert f["attempts"] == 3 and f["last_error"].startswith("RuntimeError: flaky: attempt 2")
        wait_for(lambda: state_of(producer, chain, "done"))
        child = wait_for(lambda: [j for j in admin.list(topic="demo.hello", state="done").jobs
                                  if (j["payload"] or {}).get("parent") == chain])
        assert child
        wait_for(lambda: state_of(producer, slow, "processing"))
        admin.cancel(slow)
        # Heard through the runtime's watch (within milliseconds; during a drain too:
        # cancel_test's a_cancel_during_the_drain...).
        wait_for(lambda: any("topic=demo.slow canceled" in ln and "reason=operator" in ln for ln in out),
                 what="the example's demo.slow to see the operator's cancel")
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(60) == 0
        reader.join(10)


def test_pip_installs_the_package_offline_and_the_quick_start_runs(gw, tmp_path):
    """`pip install --no-index ./client/python` into a venv that sees Debian's cffi, then
    the installed package (not the source tree) enqueues and runs a job."""
    import subprocess
    import sys

    src = os.path.join(os.environ["BROOQ_SOURCE_DIR"], "client/python")
    venv = tmp_path / "venv"
    # Without pip in the venv (seeding it takes most of the time): Debian's pip installs
    # into it (--python).
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin/python")
    subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-index", src], check=True)
    script = """
import brooq, os, sys
assert os.path.dirname(brooq.__file__).startswith(sys.prefix), brooq.__file__
with brooq.Client() as c:
    jid, created = c.enqueue("py.quick", {"hello": "world"})
w = brooq.Worker(concurrency=2)
@w.handler("py.quick")
def quick(job):
    w.stop()
    return job.payload
w.run()
with brooq.Client() as c:
    print(c.job(jid)["state"], c.job(jid)["result"])
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(BROOQ_URL=gw.url, BROOQ_TOKEN_FILE=gw.worker_token_file)
    out = subprocess.run([py, "-c", script], env=env, check=True, capture_output=True, text=True, cwd=str(tmp_path))
    assert out.stdout.strip() == "done {'hello': 'world'}", out


def readme_steps(name):
    """README's block(s) marked `<!-- test: NAME -->`, word for word, read by the same
    tests/support/readme_steps.sh that systemd_boot_test follows README with."""
    import subprocess

    src = os.environ["BROOQ_SOURCE_DIR"]
    return subprocess.run(["bash", "-c", '. "$1/tests/support/readme_steps.sh" && readme_steps "$1/README.md" "$2"',
                           "_", src, name], check=True, capture_output=True, text=True).stdout


def test_readme_python_quick_start_runs_as_written(gw, admin, tmp_path):
    """README's Python quick start as a user follows it from a clone: its install block
    (a venv in $HOME, pip from ./client/python), then its producer and its worker, saved
    as files and run with that venv's python against the gateway. The worker does the
    producer's job, prints its line and drains on SIGTERM (exit 0)."""
    import re
    import subprocess
    import sys

    from conftest import _die_with_parent

    src = os.environ["BROOQ_SOURCE_DIR"]
    home = tmp_path / "home"
    home.mkdir()
    # The library is the build tree's (BROOQ_LIB), as the README's "installed" one.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HOME=str(home), BROOQ_URL=gw.url, BROOQ_TOKEN_FILE=gw.worker_token_file, PYTHONUNBUFFERED="1")
    subprocess.run(["bash", "-ec", readme_steps("python-install")], cwd=src, env=env, check=True)
    py = str(home / "brooq-venv/bin/python")
    where = subprocess.run([py, "-c", "import brooq; print(brooq.__file__)"], cwd=str(tmp_path), env=env,
                           check=True, capture_output=True, text=True).stdout.strip()
    assert where.startswith(str(home / "brooq-venv") + "/"), where
    (tmp_path / "producer.py").write_text(readme_steps("python-producer"))
    (tmp_path / "worker.py").write_text(readme_steps("python-worker"))

    out = subprocess.run([py, "producer.py"], cwd=str(tmp_path), env=env, check=True, capture_output=True,
                         text=True).stdout
    m = re.fullmatch(r"enqueued (\d+) new\n", out)
    assert m, out
    job_id = int(m.group(1))
    w = subprocess.Popen([py, "worker.py"], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, preexec_fn=_die_with_parent)
    try:
        j = wait_for(lambda: state_of(admin, job_id, "done", "failed", "dead"), what="the README worker's job")
        assert (j["state"], j["topic"], j["result"]) == ("done", "email.send", {"sent": True}), j
    finally:
        w.send_signal(signal.SIGTERM)
        rest, _ = w.communicate(timeout=60)
    sys.stdout.write(rest)
    assert w.returncode == 0, rest
    assert "sending to a@example.org attempt 1\n" in rest, rest
