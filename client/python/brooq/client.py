# SPDX-License-Identifier: MIT
"""Producers and operators: brooq.Client (blocking) and brooq.AsyncClient (asyncio)."""

from __future__ import annotations

import asyncio
import datetime as _dt
import functools
import json
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Union

from ._ffi import cstr, ffi, lib
from .errors import InvalidArgument, check

When = Union[None, float, int, _dt.datetime]
Seconds = Union[None, float, int, _dt.timedelta]

STATES = ("pending", "processing", "failed", "done", "dead", "canceled")


class Enqueued(NamedTuple):
    """One enqueued job: its id, and whether this call created it (False: a job with
    the same topic and idempotency key existed, and ``id`` is that job's)."""

    id: int
    created: bool


class Canceled(NamedTuple):
    state: str  # the job's state afterwards
    canceled: bool  # whether this call canceled it (False for a job already terminal)


class Retried(NamedTuple):
    id: int  # the new job's id
    created: bool  # False: the job had been retried already; id is that retry


class Page(NamedTuple):
    jobs: List[Dict[str, Any]]
    next: Optional[str]  # the next page's cursor; None: this was the last page


def _enc(s: Optional[str]):
    """A str as a C string that lives as long as the returned object (NULL for None)."""
    return ffi.NULL if s is None else ffi.new("char[]", s.encode())


def _ms(seconds: Seconds) -> int:
    if seconds is None:
        return 0
    if isinstance(seconds, _dt.timedelta):
        seconds = seconds.total_seconds()
    if seconds < 0:
        raise InvalidArgument("a delay cannot be negative")
    return int(round(seconds * 1000))


def _unix_ms(when: When) -> int:
    if when is None:
        return 0
    if isinstance(when, _dt.datetime):
        if when.tzinfo is None:
            raise InvalidArgument("run_at: a naive datetime is ambiguous; give it a tzinfo")
        return int(round(when.timestamp() * 1000))
    return int(round(float(when) * 1000))


def _time(ms: int) -> Optional[_dt.datetime]:
    return None if ms == 0 else _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc)


def _json(p) -> Any:
    s = cstr(p)
    return None if s is None else json.loads(s)


def job_dict(j) -> Dict[str, Any]:
    """A brooq_job_info as a dict: payload and result decoded, times as UTC datetimes
    (None when unset)."""
    return {
        "id": j.id,
        "topic": cstr(j.topic),
        "payload": _json(j.payload),
        "state": STATES[j.state] if 0 <= j.state < len(STATES) else str(j.state),
        "attempts": j.attempts,
        "max_attempts": j.max_attempts,
        "priority": j.priority,
        "key": cstr(j.key),
        "last_error": cstr(j.last_error),
        "result": _json(j.result),
        "locked_by": cstr(j.locked_by),
        "locked_until": _time(j.locked_until_ms),
        "available_at": _time(j.available_at_ms),
        "created_at": _time(j.created_at_ms),
        "updated_at": _time(j.updated_at_ms),
        "claimed_at": _time(j.claimed_at_ms),
        "attempt_deadline": _time(j.attempt_deadline_ms),
        "max_execution_deadline": _time(j.max_execution_deadline_ms),
        "retry_of": j.retry_of or None,
        "lost_leases": j.lost_leases,
        # The latest attempts' errors, oldest first (job() only; None in list rows).
        "errors": [
            {"attempt": e.attempt, "at": _time(e.at_ms), "error": cstr(e.error)}
            for e in (j.errors[i] for i in range(j.n_errors))
        ] if j.has_errors else None,
    }


_SPEC_KEYS = {"topic", "payload", "key", "priority", "run_at", "delay", "max_attempts"}


def job_specs(jobs: List[Dict[str, Any]]):
    """A brooq_job_spec[] for jobs (dicts with enqueue()'s argument names), and the
    list of C strings it points into: keep both alive while the library uses them."""
    specs = ffi.new("brooq_job_spec[]", len(jobs))
    keep = []
    for i, j in enumerate(jobs):
        unknown = set(j) - _SPEC_KEYS
        if unknown or "topic" not in j:
            raise InvalidArgument("job %d: unknown keys %s or no topic" % (i, sorted(unknown)))
        payload = j.get("payload")
        text = json.dumps({} if payload is None else payload, separators=(",", ":")).encode()
        c_topic, c_payload, c_key = _enc(j["topic"]), ffi.new("char[]", text), _enc(j.get("key"))
        keep += [c_topic, c_payload, c_key]
        s = specs[i]
        s.size = ffi.sizeof("brooq_job_spec")
        s.topic, s.payload, s.payload_len, s.key = c_topic, c_payload, len(text), c_key
        s.delay_ms = _ms(j.get("delay"))
        s.run_at_ms = _unix_ms(j.get("run_at"))
        s.max_attempts = j.get("max_attempts") or 0
        s.priority = j.get("priority") or 0
    return specs, keep


class Client:
    """A connection to brooq-gateway, for producers and operators.

    ``url`` and ``token_file`` default to $BROOQ_URL and $BROOQ_TOKEN_FILE (the
    library reads them; the URL's own default is ipc:///run/brooq/gateway.sock).
    ``timeout`` (seconds) bounds each call. Safe to share between threads; every call
    releases the GIL while it waits for the gateway. Use as a context manager, or
    call close().
    """

    def __init__(
        self,
        url: Optional[str] = None,
        token_file: Optional[str] = None,
        *,
        timeout: float = 10.0,
        tls_ca_file: Optional[str] = None,
        tls_cert_file: Optional[str] = None,
        tls_key_file: Optional[str] = None,
        tls_server_name: Optional[str] = None,
    ):
        keep = [_enc(url), _enc(token_file), _enc(tls_ca_file), _enc(tls_cert_file)]
        keep += [_enc(tls_key_file), _enc(tls_server_name)]
        o = ffi.new("brooq_client_opts *")
        o.size = ffi.sizeof("brooq_client_opts")
        o.url, o.token_file, o.tls_ca_file, o.tls_cert_file = keep[:4]
        o.tls_key_file, o.tls_server_name = keep[4:]
        o.timeout_ms = int(timeout * 1000)
        out = ffi.new("brooq_client **")
        check(lib.brooq_client_open(o, out), "client_open")
        self._c = out[0]

    @property
    def handle(self):
        """The brooq_client * (for brooq.Worker(client=...))."""
        if self._c is None:
            raise InvalidArgument("the client is closed")
        return self._c

    def close(self) -> None:
        """Closes the connection. No call may be running on it."""
        if self._c is not None:
            lib.brooq_client_close(self._c)
            self._c = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def ping(self) -> str:
        """The gateway's name and version ("brooq-gateway 0.1.0")."""
        buf = ffi.new("char[]", 128)
        check(lib.brooq_ping(self.handle, buf, 128), "ping")
        return cstr(buf)

    def enqueue(
        self,
        topic: str,
        payload: Any = None,
        *,
        key: Optional[str] = None,
        priority: Optional[int] = None,
        run_at: When = None,
        delay: Seconds = None,
        max_attempts: Optional[int] = None,
    ) -> Enqueued:
        """Enqueues one job; payload is any JSON-serialisable value (None: {}).
        ``delay`` in seconds (or a timedelta), ``run_at`` a Unix time in seconds or an
        aware datetime, exclusive with delay; ``priority`` 1 (first) .. 9 (last)."""
        return self.enqueue_many(
            [dict(topic=topic, payload=payload, key=key, priority=priority, run_at=run_at,
                  delay=delay, max_attempts=max_attempts)]
        )[0]

    def enqueue_many(self, jobs: Iterable[Dict[str, Any]]) -> List[Enqueued]:
        """Enqueues jobs atomically (all or none) in one round trip: each a dict with
        the keys of enqueue()'s arguments (``topic`` required). At most the gateway's
        max_batch (default 1000) per call."""
        jobs = list(jobs)
        n = len(jobs)
        if n == 0:
            return []
        specs, keep = job_specs(jobs)
        res = ffi.new("brooq_enqueue_result[]", n)
        for r in res:
            r.size = ffi.sizeof("brooq_enqueue_result")
        check(lib.brooq_enqueue(self.handle, specs, n, res), "enqueue")
        return [Enqueued(res[i].id, bool(res[i].created)) for i in range(n)]

    def job(self, id: int) -> Dict[str, Any]:
        """A job's row as a dict (see job_dict); NotFound when there is none."""
        out = ffi.new("brooq_job_info **")
        check(lib.brooq_job_get(self.handle, id, out), "job")
        try:
            return job_dict(out[0])
        finally:
            lib.brooq_job_info_free(out[0])

    def cancel(self, id: int) -> Canceled:
        """Cancels a job (admin token). A running handler sees its cancelled event."""
        st = ffi.new("brooq_state *")
        done = ffi.new("bool *")
        check(lib.brooq_cancel(self.handle, id, st, done), "cancel")
        return Canceled(STATES[st[0]], bool(done[0]))

    def retry(self, id: int) -> Retried:
        """Runs a dead or canceled job again as a new job (admin token)."""
        new_id = ffi.new("uint64_t *")
        created = ffi.new("bool *")
        check(lib.brooq_retry(self.handle, id, new_id, created), "retry")
        return Retried(new_id[0], bool(created[0]))

    def list(
        self,
        *,
        topic: Optional[str] = None,
        state: Optional[str] = None,
        key: Optional[str] = None,
        created_after: When = None,
        created_before: When = None,
        limit: int = 50,
        cursor: Optional[str] = None,
    ) -> Page:
        """One page of jobs matching every filter, newest first (admin token); pass
        the page's ``next`` as ``cursor`` for the next one."""
        o = ffi.new("brooq_list_opts *")
        o.size = ffi.sizeof("brooq_list_opts")
        keep = [_enc(topic), _enc(key), _enc(cursor)]
        o.topic, o.key, o.cursor = keep
        if state is not None:
            if state not in STATES:
                raise InvalidArgument("list: state must be one of %s" % ", ".join(STATES))
            o.has_state = True
            o.state = STATES.index(state)
        o.created_after_ms = _unix_ms(created_after)
        o.created_before_ms = _unix_ms(created_before)
        o.limit = limit
        out = ffi.new("brooq_job_page **")
        check(lib.brooq_list(self.handle, o, out), "list")
        try:
            p = out[0]
            return Page([job_dict(p.jobs[i]) for i in range(p.n)], cstr(p.next))
        finally:
            lib.brooq_job_page_free(out[0])


class AsyncClient:
    """Client for asyncio code: the same methods as coroutines. Each call runs the
    blocking library call on the loop's default executor (the library releases the
    GIL while it waits), so the loop never blocks on the gateway."""

    def __init__(self, url: Optional[str] = None, token_file: Optional[str] = None, **kw: Any):
        self._sync = Client(url, token_file, **kw)

    async def _call(self, name: str, *args: Any, **kw: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(getattr(self._sync, name), *args, **kw))

    async def ping(self) -> str:
        return await self._call("ping")

    async def enqueue(self, topic: str, payload: Any = None, **kw: Any) -> Enqueued:
        return await self._call("enqueue", topic, payload, **kw)

    async def enqueue_many(self, jobs: Iterable[Dict[str, Any]]) -> List[Enqueued]:
        return await self._call("enqueue_many", list(jobs))

    async def job(self, id: int) -> Dict[str, Any]:
        return await self._call("job", id)

    async def cancel(self, id: int) -> Canceled:
        return await self._call("cancel", id)

    async def retry(self, id: int) -> Retried:
        return await self._call("retry", id)

    async def list(self, **kw: Any) -> Page:
        return await self._call("list", **kw)

    async def close(self) -> None:
        self._sync.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
