"""The share consumer's configuration: Kafka's config names, defaults and validation."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from producer.protocol.client import KafkaClient
from producer.protocol.client_defaults import CONSUMER_DEFAULTS
from producer.protocol.config_values import consumer_int
from producer.protocol.security import PLAINTEXT, SECURITY_KEYS, ClientSecurity

__all__ = ["ACQUIRE_MODES", "DEFAULTS", "MODES", "ShareConsumerConfig", "new_member_id"]

MODES: Final = ("implicit", "explicit", "transactional")

#: ``share.acquire.mode`` (KIP-1206): its values and their ShareFetch v2 ``ShareAcquireMode``
#: ids.  ``record_limit`` makes the broker acquire at most ``max.poll.records`` per fetch.
ACQUIRE_MODES: Final[dict[str, int]] = {"batch_optimized": 0, "record_limit": 1}

# Kafka config name -> default.  Anything else is rejected.
DEFAULTS: Final[dict[str, Any]] = {
    **CONSUMER_DEFAULTS,
    "client.id": "sharetxn-share-consumer",
    "share.acknowledgement.mode": "implicit",
    # Kafka's default is the enum constant's name, upper case; values are case-insensitive.
    "share.acquire.mode": "BATCH_OPTIMIZED",
    "rack.id": None,
}

_INT_KEYS: Final = (
    "max.poll.records",
    "fetch.max.wait.ms",
    "fetch.min.bytes",
    "fetch.max.bytes",
    "request.timeout.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
)


def new_member_id() -> str:
    """A 22-character url-safe base64 uuid4, as librdkafka and the Java client make them."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")


def _acquire_mode(raw: object) -> str:
    """``share.acquire.mode`` as Kafka's validator takes it: a string, trimmed, either mode in
    any case."""
    if not isinstance(raw, str):
        msg = (
            f"Invalid value {raw} for configuration share.acquire.mode: Expected value to be a"
            f" string, but it was a {type(raw).__name__}"
        )
        raise ValueError(msg)
    mode = raw.strip().lower()
    if mode not in ACQUIRE_MODES:
        msg = (
            f"Invalid value {raw.strip()} for configuration share.acquire.mode: Invalid value"
            f" `{raw.strip()}` for configuration share.acquire.mode. The value must either be"
            " 'batch_optimized' or 'record_limit'."
        )
        raise ValueError(msg)
    return mode


# -- configuration ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareConsumerConfig:
    bootstrap_servers: str
    group_id: str
    client_id: str
    mode: str
    max_poll_records: int
    fetch_max_wait_ms: int
    fetch_min_bytes: int
    fetch_max_bytes: int
    request_timeout_ms: int
    rack_id: str | None
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    check_crcs: bool
    security: ClientSecurity = PLAINTEXT
    #: ``share.acquire.mode``: "batch_optimized" or "record_limit" (lower case).
    acquire_mode: str = "batch_optimized"

    @property
    def record_limit(self) -> bool:
        return self.acquire_mode == "record_limit"

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> ShareConsumerConfig:
        raw_config: object = config
        if not isinstance(raw_config, Mapping):
            msg = f"ShareConsumer config must be a dict, not {type(raw_config).__name__}"
            raise TypeError(msg)
        for key in config:
            if key not in DEFAULTS and key not in SECURITY_KEYS:
                msg = f"unknown ShareConsumer config {key!r}"
                raise ValueError(msg)
        values = {**DEFAULTS, **config}
        for key in ("bootstrap.servers", "group.id"):
            value = values[key]
            if not isinstance(value, str) or not value.strip():
                msg = f"ShareConsumer config {key!r} is required (a non-empty string)"
                raise ValueError(msg)
        mode = str(values["share.acknowledgement.mode"]).strip().lower()
        if mode not in MODES:
            msg = (
                f"share.acknowledgement.mode must be one of {', '.join(MODES)}, "
                f"not {values['share.acknowledgement.mode']!r}"
            )
            raise ValueError(msg)
        acquire_mode = _acquire_mode(values["share.acquire.mode"])
        ints = {
            key: consumer_int("ShareConsumer", key, values[key], ValueError) for key in _INT_KEYS
        }
        rack = values["rack.id"]
        if rack is not None and (not isinstance(rack, str) or not rack.strip()):
            msg = "ShareConsumer config 'rack.id' must be a non-empty string"
            raise ValueError(msg)
        crcs = values["check.crcs"]
        if isinstance(crcs, str):
            if crcs.lower() not in ("true", "false"):
                msg = f"ShareConsumer config 'check.crcs' must be true or false, not {crcs!r}"
                raise ValueError(msg)
            crcs = crcs.lower() == "true"
        return cls(
            bootstrap_servers=values["bootstrap.servers"],
            group_id=values["group.id"],
            client_id=str(values["client.id"]),
            mode=mode,
            max_poll_records=ints["max.poll.records"],
            fetch_max_wait_ms=ints["fetch.max.wait.ms"],
            fetch_min_bytes=ints["fetch.min.bytes"],
            fetch_max_bytes=ints["fetch.max.bytes"],
            request_timeout_ms=ints["request.timeout.ms"],
            rack_id=rack,
            retry_backoff_ms=ints["retry.backoff.ms"],
            retry_backoff_max_ms=max(ints["retry.backoff.max.ms"], ints["retry.backoff.ms"]),
            check_crcs=bool(crcs),
            security=ClientSecurity.from_config(config),
            acquire_mode=acquire_mode,
        )

    def new_client(self) -> KafkaClient:
        return KafkaClient(
            self.bootstrap_servers,
            client_id=self.client_id,
            request_timeout_ms=self.request_timeout_ms,
            retry_backoff_ms=max(self.retry_backoff_ms, 1),
            retry_backoff_max_ms=self.retry_backoff_max_ms,
            security=self.security,
        )
