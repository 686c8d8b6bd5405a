"""Per-connection pipelining: a handler may let its connection read the next request.

The server handles one connection's requests one after another, in the order they came
(Kafka clients rely on it), and writes the responses in that order.  A handler that has
applied its effects and only waits for them to become durable (Produce, waiting for the
group commit's fsync) calls ``release_connection``: the connection then reads and handles
its next requests meanwhile, and this response still goes out before theirs.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

#: Set by the server around each request it handles.
RELEASE: ContextVar[Callable[[], None] | None] = ContextVar("sharetxn_release", default=None)


def release_connection() -> None:
    """Let this request's connection go on with its next request (no-op outside the server)."""
    release = RELEASE.get()
    if release is not None:
        release()
