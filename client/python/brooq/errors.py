# SPDX-License-Identifier: MIT
"""Exceptions: one class per brooq_err code, and the signals a handler raises."""

from __future__ import annotations

from typing import Dict, Optional, Type

from ._ffi import cstr, lib


class Error(Exception):
    """A failed call. ``code`` is the library's brooq_err name ("not_found", ...),
    ``message`` the gateway's own text (or the library's explanation)."""

    code = "error"

    def __init__(self, message: str = "", op: str = ""):
        self.message = message
        self.op = op
        text = "%s: %s" % (op, message) if op else message
        super().__init__(text or self.code)


class InvalidArgument(Error, ValueError):
    """A bad argument: caught by the library before sending, or refused by the gateway."""

    code = "invalid_argument"


class OutOfMemory(Error, MemoryError):
    code = "out_of_memory"


class Timeout(Error, TimeoutError):
    """Sent, but no reply within the timeout: the request may have run."""

    code = "timed_out"


class Unavailable(Error):
    """The gateway (or its database) cannot serve the request now; try again later."""

    code = "unavailable"


class ConnectFailed(Unavailable, ConnectionError):
    """No gateway listens at the URL, or the connection broke during the call."""

    code = "connect"


class ProtocolError(Error):
    code = "protocol"


class TokenError(Error):
    """The token file is missing, unreadable or too short."""

    code = "token"


class Unauthenticated(Error):
    code = "unauthenticated"


class PermissionDenied(Error):
    """The token's role may not do this (admin calls need an admin token)."""

    code = "permission_denied"


class NotFound(Error, LookupError):
    code = "not_found"


class TooLarge(Error):
    code = "too_large"


class ResourceExhausted(Error):
    code = "resource_exhausted"


class Internal(Error):
    code = "internal"


class Conflict(Error):
    """The job's state does not allow it (retry, delete); nothing changed."""

    code = "conflict"


_BY_CODE: Dict[int, Type[Error]] = {
    lib.BROOQ_EINVAL: InvalidArgument,
    lib.BROOQ_ENOMEM: OutOfMemory,
    lib.BROOQ_ETIMEDOUT: Timeout,
    lib.BROOQ_ECONNECT: ConnectFailed,
    lib.BROOQ_EPROTO: ProtocolError,
    lib.BROOQ_ETOKEN: TokenError,
    lib.BROOQ_EINVALID_ARGUMENT: InvalidArgument,
    lib.BROOQ_EUNAUTHENTICATED: Unauthenticated,
    lib.BROOQ_EPERMISSION_DENIED: PermissionDenied,
    lib.BROOQ_ENOT_FOUND: NotFound,
    lib.BROOQ_EUNAVAILABLE: Unavailable,
    lib.BROOQ_ETOO_LARGE: TooLarge,
    lib.BROOQ_ERESOURCE_EXHAUSTED: ResourceExhausted,
    lib.BROOQ_EINTERNAL: Internal,
    lib.BROOQ_ECONFLICT: Conflict,
}


def check(rc: int, op: str) -> None:
    """Raises the exception of brooq_err rc (nothing for BROOQ_OK). Must run on the
    thread that made the call: brooq_last_message() is per thread."""
    if rc == lib.BROOQ_OK:
        return
    msg = cstr(lib.brooq_last_message()) or cstr(lib.brooq_strerror(rc))
    raise _BY_CODE.get(rc, Error)(msg, op)


# ---- what a handler raises -------------------------------------------------------------


class Retry(Exception):
    """Raised by a handler: run the job again. With ``delay`` (seconds) it becomes
    available again after that delay, the attempt spent (``dead`` if it was the
    last); without, it fails with the gateway's backoff and ``message`` as its
    last_error."""

    def __init__(self, message: str = "retry requested", *, delay: Optional[float] = None):
        super().__init__(message)
        self.delay = delay


class Cancel(Exception):
    """Raised by a handler: the job is no longer relevant and ends ``canceled``,
    with ``reason`` stored as its last_error."""

    def __init__(self, reason: str = "canceled by its handler"):
        super().__init__(reason)
        self.reason = reason


class Preserve(Exception):
    """Raised by a handler: a failure that does not consume the attempt (the job is
    retried with backoff and its attempt count given back): for failures that are
    not the job's fault, such as a dependency being down."""

    def __init__(self, message: str = "attempt preserved"):
        super().__init__(message)
        self.message = message
