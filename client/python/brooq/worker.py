# SPDX-License-Identifier: MIT
"""Workers: brooq.Worker runs Python handlers on libbrooq-client's worker runtime.

The runtime (claims, prefetch, heartbeats, leases, cancels, attempt timeouts,
backoff, settles) is the C library's, in pull mode: it hands each job to this module
(brooq_worker_next), which runs the handler and hands the job back with its outcome
(brooq_job_finish). Nothing of the protocol is reimplemented here.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import inspect
import json
import logging
import signal
import threading
import traceback
from typing import Any, Callable, Dict, Optional

from ._ffi import cstr, ffi, lib
from .client import Client, job_specs
from .errors import Cancel, InvalidArgument, Preserve, Retry, check

log = logging.getLogger("brooq")

_REASONS = {
    lib.BROOQ_CANCEL_TIMEOUT: "timeout",
    lib.BROOQ_CANCEL_OPERATOR: "operator",
    lib.BROOQ_CANCEL_LEASE_LOST: "lease_lost",
    lib.BROOQ_CANCEL_MAX_EXECUTION: "max_execution",
    lib.BROOQ_CANCEL_STOP: "stop",
}

# Frames of a handler's traceback kept in last_error (the gateway keeps 4096 bytes).
TRACEBACK_FRAMES = 5


class CancelEvent:
    """Set by the runtime when the handler should stop: the attempt timed out
    ("timeout"), an operator canceled the job ("operator"), its lease was lost
    ("lease_lost"), it ran past the maximum execution time ("max_execution"), or the
    worker is stopping past its grace ("stop"). ``reason`` says which (None while
    not set). After anything but a timeout the handler's outcome is discarded; after
    a timeout the attempt is recorded as failed whatever the handler returns."""

    def __init__(self) -> None:
        self._ev = threading.Event()
        self.reason: Optional[str] = None
        self._aev: Optional[asyncio.Event] = None

    def is_set(self) -> bool:
        return self._ev.is_set()

    __bool__ = is_set

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until set (threads); True once set."""
        return self._ev.wait(timeout)

    async def wait_async(self) -> None:
        """Waits until set, in an async handler (on the worker's event loop)."""
        if self._aev is None:
            self._aev = asyncio.Event()
            if self._ev.is_set():
                self._aev.set()
        await self._aev.wait()

    def _set(self, reason: str) -> None:
        self.reason = reason
        self._ev.set()
        if self._aev is not None:
            self._aev.set()


class Job:
    """The job a handler runs: ``id``, ``topic``, ``payload`` (decoded JSON),
    ``attempt`` (1 on the first run), ``max_attempts``, ``deadline`` (aware UTC
    datetime when the topic has an attempt timeout, else None) and ``cancelled``
    (a CancelEvent). Valid while its handler runs."""

    __slots__ = ("id", "topic", "payload", "attempt", "max_attempts", "deadline", "cancelled", "_ctx")

    def __init__(self, ctx) -> None:
        self._ctx = ctx
        self.id: int = lib.brooq_job_id(ctx)
        self.topic: str = ffi.string(lib.brooq_job_topic(ctx)).decode()
        n = ffi.new("size_t *")
        p = lib.brooq_job_payload(ctx, n)
        self.payload: Any = json.loads(ffi.unpack(p, n[0]))
        self.attempt: int = lib.brooq_job_attempts(ctx)
        self.max_attempts: int = lib.brooq_job_max_attempts(ctx)
        d = lib.brooq_job_deadline(ctx)
        self.deadline: Optional[_dt.datetime] = (
            _dt.datetime.fromtimestamp(d / 1000, _dt.timezone.utc) if d else None
        )
        self.cancelled = CancelEvent()

    def __repr__(self) -> str:
        return "<brooq.Job %d %s attempt %d/%d>" % (self.id, self.topic, self.attempt, self.max_attempts)


class Done:
    """What a handler may return to be done with chained jobs: ``chain`` is a list
    of dicts with the keys of Client.enqueue's arguments (topic, payload, key,
    priority, delay, run_at, max_attempts), enqueued in the same transaction as the
    job's settle (if they cannot be, the job is not done either and runs again);
    ``result`` is stored as the job's result."""

    __slots__ = ("result", "chain")

    def __init__(self, result: Any = None, chain: Optional[list] = None) -> None:
        self.result = result
        self.chain = list(chain or [])


def describe_exception(e: BaseException, frames: int = TRACEBACK_FRAMES) -> str:
    """last_error for a handler's exception: "Type: message", then the last frames of
    its traceback (type and message first: the gateway keeps the first 4096 bytes)."""
    t = type(e)
    name = t.__qualname__ if t.__module__ in ("builtins", "__main__") else "%s.%s" % (t.__module__, t.__qualname__)
    msg = str(e)
    if len(msg) > 1500:
        msg = msg[:1500] + "..."
    tb = traceback.extract_tb(e.__traceback__)[-frames:]
    lines = ["%s: %s" % (name, msg) if msg else name]
    if tb:
        lines.append("Traceback (most recent call last, last %d frames):" % len(tb))
        lines += [ln.rstrip("\n") for ln in traceback.format_list(tb)]
    return "\n".join(lines)


class Worker:
    """Runs handlers for topics on libbrooq-client's worker runtime.

    ``concurrency`` handlers run at once (threads for plain functions; tasks on the
    event loop for ``async def`` ones). ``lease``, ``stop_grace`` and ``hung_grace``
    are seconds (None: the runtime's defaults: the gateway's lease, 10 s, 5 s);
    ``prefetch_max`` bounds the jobs claimed beyond ``concurrency`` (0: up to 1000,
    at the handlers' pace; negative: none). ``client`` shares an open Client instead
    of opening one from ``url`` / ``token_file`` (default $BROOQ_URL,
    $BROOQ_TOKEN_FILE; a worker token is enough).

        w = brooq.Worker(concurrency=8)

        @w.handler("email.send")
        def send(job):
            deliver(job.payload["to"])
            return {"sent": True}          # stored as the job's result

        w.run()                            # until SIGTERM / SIGINT, then drains
    """

    def __init__(
        self,
        url: Optional[str] = None,
        token_file: Optional[str] = None,
        *,
        concurrency: int = 4,
        name: Optional[str] = None,
        lease: Optional[float] = None,
        stop_grace: Optional[float] = None,
        hung_grace: Optional[float] = None,
        prefetch_max: int = 0,
        wait: Optional[float] = None,
        timeout: float = 10.0,
        client: Optional[Client] = None,
    ):
        if not 1 <= concurrency <= 1000:
            raise InvalidArgument("Worker: concurrency must be 1..1000")
        self.concurrency = concurrency
        self._opts = dict(name=name, lease=lease, stop_grace=stop_grace, hung_grace=hung_grace,
                          prefetch_max=prefetch_max, wait=wait)
        self._own_client = client is None
        self._client = client if client is not None else Client(url, token_file, timeout=timeout)
        self._handlers: Dict[str, Callable[[Job], Any]] = {}
        self._w = None
        self._lock = threading.Lock()
        self._held: Dict[int, Job] = {}  # running jobs by ctx address
        self._stop_asked = False
        self._stopped = threading.Event()
        self._ran = False

    # ---- registration -------------------------------------------------------------------

    def handler(self, topic: str) -> Callable[[Callable[[Job], Any]], Callable[[Job], Any]]:
        """Decorator: the function handles ``topic``'s jobs. Its return value (JSON-
        serialisable; None: none) is stored as the job's result; raising records a
        failure (retried with backoff) with the exception's type, message and last
        traceback frames; raise brooq.Retry, brooq.Cancel or brooq.Preserve to decide
        otherwise. A handler must be idempotent: a job can run again (a lost lease, a
        killed worker)."""

        def register(fn: Callable[[Job], Any]) -> Callable[[Job], Any]:
            if self._ran:
                raise InvalidArgument("Worker.handler: the worker has already run")
            if topic in self._handlers:
                raise InvalidArgument("Worker.handler: %s already has a handler" % topic)
            self._handlers[topic] = fn
            return fn

        return register

    # ---- the C worker -------------------------------------------------------------------

    def _open(self) -> None:
        if self._ran:
            raise InvalidArgument("Worker.run: a worker runs once")
        if not self._handlers:
            raise InvalidArgument("Worker.run: no handler registered")
        self._ran = True
        o = ffi.new("brooq_worker_opts *")
        o.size = ffi.sizeof("brooq_worker_opts")
        keep = ffi.new("char[]", self._opts["name"].encode()) if self._opts["name"] else ffi.NULL
        o.name = keep
        o.threads = self.concurrency
        ms = lambda s: 0 if s is None else max(1, int(s * 1000))  # noqa: E731
        o.lease_ms = ms(self._opts["lease"])
        o.wait_ms = ms(self._opts["wait"])
        o.stop_grace_ms = ms(self._opts["stop_grace"])
        o.hung_grace_ms = ms(self._opts["hung_grace"])
        o.prefetch_max = self._opts["prefetch_max"]
        out = ffi.new("brooq_worker **")
        check(lib.brooq_worker_new(self._client.handle, o, out), "worker_new")
        w = out[0]
        try:
            for topic in self._handlers:
                check(lib.brooq_worker_handle_pull(w, topic.encode()), "worker_handle")
        except BaseException:
            lib.brooq_worker_free(w)
            raise
        self._w = w
        self._hung_grace = self._opts["hung_grace"] or 5.0
        if self._stop_asked:
            lib.brooq_worker_stop(w)

    def stop(self) -> None:
        """Starts the graceful stop: no more claims; jobs claimed but not started are
        given back at once; running handlers get ``stop_grace`` to finish, then their
        ``cancelled`` event is set (reason "stop") and their outcome discarded (the
        jobs come back through the reaper when their leases run out). Returns at once;
        any thread, or a signal handler."""
        self._stop_asked = True
        if self._w is not None:
            lib.brooq_worker_stop(self._w)

    def _close(self, leftover: int) -> None:
        """Frees the C worker once no handler holds a job (else leaves it: freeing
        would pull the jobs from under them), and the client if it is ours."""
        if leftover:
            log.warning("brooq: %d handlers still running after the stop; leaving them", leftover)
            return
        lib.brooq_worker_free(self._w)
        self._w = None
        if self._own_client:
            self._client.close()

    def _check_cancels(self) -> None:
        """Sets the cancelled event of every held job whose flag is up. Under no lock
        but self._lock: a job leaves _held (under it) before brooq_job_finish."""
        with self._lock:
            for job in self._held.values():
                r = lib.brooq_job_cancel_reason(job._ctx)
                if r != lib.BROOQ_CANCEL_NONE:
                    name = _REASONS.get(r, "unknown")
                    if job.cancelled.reason != name:
                        job.cancelled._set(name)

    # ---- one job ------------------------------------------------------------------------

    def _begin(self, ctx) -> Optional[Job]:
        """A Job for ctx, registered as held; None (and the job failed and finished)
        when its payload is not JSON."""
        try:
            job = Job(ctx)
        except Exception as e:  # json.JSONDecodeError, UnicodeDecodeError
            lib.brooq_job_fail(ctx, ("worker: payload: " + describe_exception(e, 0)).encode())
            lib.brooq_job_finish(ctx)
            return None
        key = int(ffi.cast("uintptr_t", ctx))
        with self._lock:
            self._held[key] = job
        # A flag raised before it was registered moved no count we will look at again.
        r = lib.brooq_job_cancel_reason(ctx)
        if r != lib.BROOQ_CANCEL_NONE:
            job.cancelled._set(_REASONS.get(r, "unknown"))
        return job

    def _end(self, job: Job, result: Any = None, exc: Optional[BaseException] = None) -> None:
        """Records the handler's outcome and hands the job back to the runtime."""
        ctx = job._ctx
        if exc is None:
            try:
                chain = None
                if isinstance(result, Done):
                    result, chain = result.result, result.chain
                if chain:
                    specs, keep = job_specs(chain)
                    lib.brooq_job_done_chain(ctx, specs, len(chain))
                if result is None:
                    if not chain:
                        lib.brooq_job_done(ctx)
                else:
                    text = json.dumps(result).encode()
                    lib.brooq_job_done_result(ctx, text, len(text))
            except (TypeError, ValueError) as e:
                lib.brooq_job_fail(ctx, ("worker: result: " + describe_exception(e, 0)).encode())
        elif isinstance(exc, Retry):
            if exc.delay is not None:
                lib.brooq_job_delay(ctx, max(0, int(exc.delay * 1000)))
            else:
                lib.brooq_job_fail(ctx, str(exc).encode())
        elif isinstance(exc, Cancel):
            lib.brooq_job_cancel_error(ctx, exc.reason.encode())
        elif isinstance(exc, Preserve):
            lib.brooq_job_preserve(ctx, exc.message.encode())
        else:
            lib.brooq_job_fail(ctx, describe_exception(exc).encode())
        with self._lock:
            del self._held[int(ffi.cast("uintptr_t", ctx))]
            lib.brooq_job_finish(ctx)

    # ---- threads ------------------------------------------------------------------------

    def _run_c(self, done: Callable[[], None]) -> None:
        try:
            rc = lib.brooq_worker_run(self._w)
            if rc != lib.BROOQ_OK:
                log.error("brooq: worker_run: %s", cstr(lib.brooq_last_message()))
        finally:
            self._stopped.set()
            done()

    def _puller(self) -> None:
        jp = ffi.new("brooq_job_ctx **")
        while True:
            rc = lib.brooq_worker_next(self._w, -1, jp)
            if rc != lib.BROOQ_OK or jp[0] == ffi.NULL:
                return
            job = self._begin(jp[0])
            if job is None:
                continue
            fn = self._handlers[job.topic]
            try:
                self._end(job, fn(job))
            except Exception as e:
                self._end(job, exc=e)

    def _canceller(self) -> None:
        seen = lib.brooq_worker_wait_cancels(self._w, 0, 0)
        while not self._stopped.is_set():
            seq = lib.brooq_worker_wait_cancels(self._w, seen, 1000)
            if seq != seen:
                seen = seq
                self._check_cancels()

    def run(self, *, signals: bool = True) -> None:
        """Runs until stop() or (with ``signals``, from the main thread) SIGTERM or
        SIGINT, then drains (see stop()) and returns. ``async def`` handlers: the
        whole worker runs on a new event loop (asyncio.run(self.run_async()))."""
        if any(inspect.iscoroutinefunction(f) for f in self._handlers.values()):
            asyncio.run(self.run_async(signals=signals))
            return
        self._open()
        restore = self._signals_install() if signals else {}
        try:
            disp = threading.Thread(target=self._run_c, args=(lambda: None,), name="brooq-dispatch", daemon=True)
            pullers = [threading.Thread(target=self._puller, name="brooq-handler-%d" % i, daemon=True)
                       for i in range(self.concurrency)]
            canceller = threading.Thread(target=self._canceller, name="brooq-cancels", daemon=True)
            for t in [disp, canceller] + pullers:
                t.start()
            while disp.is_alive():
                disp.join(0.5)
            canceller.join()
            for t in pullers:
                t.join(self._hung_grace)
            self._close(sum(t.is_alive() for t in pullers))
        finally:
            for sig, h in restore.items():
                signal.signal(sig, h)

    def _signals_install(self) -> Dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        old = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            old[sig] = signal.signal(sig, lambda *_: self.stop())
        return old

    # ---- asyncio ------------------------------------------------------------------------

    async def run_async(self, *, signals: bool = True) -> None:
        """run() on the running event loop: ``async def`` handlers run as tasks on it,
        plain ones on its default executor; at most ``concurrency`` at once. The loop
        waits on the runtime's descriptor (brooq_worker_fd), never on a thread."""
        loop = asyncio.get_running_loop()
        self._open()
        w = self._w
        tasks: set = set()
        stopped = loop.create_future()
        seen = [lib.brooq_worker_wait_cancels(w, 0, 0)]
        jp = ffi.new("brooq_job_ctx **")
        fd = lib.brooq_worker_fd(w)
        closed = [False]

        def on_ready() -> None:
            while True:
                rc = lib.brooq_worker_next(w, 0, jp)
                if rc != lib.BROOQ_OK:
                    break
                if jp[0] == ffi.NULL:  # the worker stopped: no more jobs
                    if not closed[0]:
                        closed[0] = True
                        loop.remove_reader(fd)
                    break
                job = self._begin(jp[0])
                if job is not None:
                    t = loop.create_task(self._run_async_one(job))
                    tasks.add(t)
                    t.add_done_callback(tasks.discard)
            seq = lib.brooq_worker_wait_cancels(w, seen[0], 0)
            if seq != seen[0]:
                seen[0] = seq
                self._check_cancels()

        def finished() -> None:
            loop.call_soon_threadsafe(lambda: stopped.done() or stopped.set_result(None))

        loop.add_reader(fd, on_ready)
        installed = []
        if signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
                installed.append(sig)
        disp = threading.Thread(target=self._run_c, args=(finished,), name="brooq-dispatch", daemon=True)
        disp.start()
        try:
            await stopped
            on_ready()  # the last cancels (stop past the grace)
            if tasks:
                _, pending = await asyncio.wait(set(tasks), timeout=self._hung_grace)
                for t in pending:
                    t.cancel()
                if pending:
                    await asyncio.wait(pending, timeout=1.0)
        finally:
            if not closed[0]:
                loop.remove_reader(fd)
            for sig in installed:
                loop.remove_signal_handler(sig)
            disp.join()
            self._close(len(self._held))

    async def _run_async_one(self, job: Job) -> None:
        fn = self._handlers[job.topic]
        try:
            if inspect.iscoroutinefunction(fn):
                result = await fn(job)
            else:
                result = await asyncio.get_running_loop().run_in_executor(None, fn, job)
        except asyncio.CancelledError:
            # Only after the stop's grace and the hung grace: the outcome is discarded.
            self._end(job, exc=RuntimeError("handler task cancelled at stop"))
            raise
        except Exception as e:
            self._end(job, exc=e)
        else:
            self._end(job, result)
