"""Kafka client config defaults shared by every sharetxn client (Kafka's CommonClientConfigs).

The producer, the consumers and the admin client each add their own keys; the keys they share
are defined once here.
"""

from __future__ import annotations

from typing import Any, Final

from txn.limits import SHARE_FETCH_MAX_RECORDS

REQUEST_TIMEOUT_MS: Final = 30000
RETRY_BACKOFF_MS: Final = 100
RETRY_BACKOFF_MAX_MS: Final = 1000

#: Keys every client accepts, with Kafka's defaults.
CONNECTION_DEFAULTS: Final[dict[str, Any]] = {
    "bootstrap.servers": None,
    "request.timeout.ms": REQUEST_TIMEOUT_MS,
    "retry.backoff.ms": RETRY_BACKOFF_MS,
}

#: Keys every consumer (group or share) accepts, with Kafka's consumer defaults.
CONSUMER_DEFAULTS: Final[dict[str, Any]] = {
    **CONNECTION_DEFAULTS,
    "group.id": None,
    "max.poll.records": SHARE_FETCH_MAX_RECORDS,
    "fetch.max.wait.ms": 500,
    "fetch.min.bytes": 1,
    "fetch.max.bytes": 52428800,
    "retry.backoff.max.ms": RETRY_BACKOFF_MAX_MS,
    "check.crcs": True,
}
