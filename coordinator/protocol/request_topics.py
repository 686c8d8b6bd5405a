"""Which topics the principal of the request being handled may describe.

The authorization rules (``coordinator.protocol.acl_rules``) run before a handler; a
ConsumerGroupHeartbeat's regex is resolved later, against the principal of the heartbeat
that asked (Kafka's TopicRegexResolver authorizes DESCRIBE with that request's context).
The membership rule sets ``DESCRIBABLE`` around the handler; with no authorizer it stays
None: every topic.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

__all__ = ["DESCRIBABLE"]

DESCRIBABLE: contextvars.ContextVar[Callable[[str], bool] | None] = contextvars.ContextVar(
    "sharetxn_describable_topics", default=None
)
