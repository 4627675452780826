# SPDX-License-Identifier: MIT
"""brooq: workers and producers for the brooq job queue, on libbrooq-client.

    import brooq

    with brooq.Client() as c:                     # $BROOQ_URL, $BROOQ_TOKEN_FILE
        job_id, created = c.enqueue("email.send", {"to": "a@example.com"})

    w = brooq.Worker(concurrency=8)

    @w.handler("email.send")
    def send(job):
        ...

    w.run()

See docs/python.md.
"""

from ._ffi import lib as _lib, cstr as _cstr
from .client import AsyncClient, Canceled, Client, Enqueued, Page, Retried
from .errors import (
    Cancel,
    Conflict,
    ConnectFailed,
    Error,
    Internal,
    InvalidArgument,
    NotFound,
    OutOfMemory,
    PermissionDenied,
    Preserve,
    ProtocolError,
    ResourceExhausted,
    Retry,
    Timeout,
    TokenError,
    TooLarge,
    Unauthenticated,
    Unavailable,
)
from .worker import CancelEvent, Done, Job, Worker, describe_exception

__version__ = "0.1.0"


def library_version() -> str:
    """The version of the libbrooq-client actually loaded."""
    return _cstr(_lib.brooq_version())


__all__ = [
    "AsyncClient", "Cancel", "CancelEvent", "Canceled", "Client", "Conflict", "ConnectFailed", "Done",
    "Enqueued", "Error", "Internal", "InvalidArgument", "Job", "NotFound", "OutOfMemory", "Page",
    "PermissionDenied", "Preserve", "ProtocolError", "ResourceExhausted", "Retried", "Retry",
    "Timeout", "TokenError", "TooLarge", "Unauthenticated", "Unavailable", "Worker",
    "describe_exception", "library_version",
]
