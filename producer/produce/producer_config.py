"""The transactional producer's configuration: Kafka's producer config names, their defaults
and parsing (``ProducerConfig.from_dict``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from producer.protocol.client_defaults import CONNECTION_DEFAULTS
from producer.protocol.config_values import as_bool, as_int
from producer.protocol.security import PLAINTEXT, SECURITY_KEYS, ClientSecurity
from txn.compression import Codec, UnsupportedCompressionError, codec_by_name

#: ``sharetxn.prepare.mode`` and ``sharetxn.resume.mode`` (producer/produce/prepared_txn.py applies
#: them).
PREPARE_MODES: Final = ("auto", "enable2pc", "timeout")
RESUME_MODES: Final = ("auto", "keep-prepared", "stored-ids")

_DEFAULTS: dict[str, Any] = {
    **CONNECTION_DEFAULTS,
    "transactional.id": None,
    "transaction.timeout.ms": 60000,
    "transaction.two.phase.commit.enable": False,
    # sharetxn's own: which 2PC protocol to use (producer/produce/prepared_txn.py).
    "sharetxn.prepare.mode": "auto",
    "sharetxn.resume.mode": "auto",
    "linger.ms": 5,
    "batch.size": 16384,
    "acks": "all",
    "delivery.timeout.ms": 120000,
    "max.block.ms": 60000,
    "client.id": "sharetxn-producer",
    "enable.idempotence": True,
    "compression.type": "none",
}


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    """The producer's Kafka configuration, parsed and checked."""

    bootstrap_servers: str
    transactional_id: str | None
    transaction_timeout_ms: int
    two_phase_commit: bool
    linger_ms: int
    batch_size: int
    acks: int
    request_timeout_ms: int
    delivery_timeout_ms: int
    max_block_ms: int
    client_id: str
    retry_backoff_ms: int
    enable_idempotence: bool
    compression: Codec = Codec.NONE
    security: ClientSecurity = PLAINTEXT
    prepare_mode: str = "auto"
    resume_mode: str = "auto"

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> ProducerConfig:
        """Parse Kafka-named settings; unknown keys and bad values raise ValueError naming them."""
        for key in config:
            if key not in _DEFAULTS and key not in SECURITY_KEYS:
                known = ", ".join(sorted({*_DEFAULTS, *SECURITY_KEYS}))
                msg = f"unknown producer config {key!r} (known: {known})"
                raise ValueError(msg)
        values = {
            **_DEFAULTS,
            **{k: v for k, v in config.items() if v is not None and k not in SECURITY_KEYS},
        }
        bootstrap = values["bootstrap.servers"]
        if not bootstrap or not isinstance(bootstrap, str):
            msg = "bootstrap.servers is required (HOST:PORT[,HOST:PORT...])"
            raise ValueError(msg)
        tid = values["transactional.id"]
        if tid is not None and (not isinstance(tid, str) or not tid):
            msg = "transactional.id must be a non-empty string"
            raise ValueError(msg)
        idempotent = _bool(values, "enable.idempotence")
        acks = _acks(values["acks"])
        if tid is not None and not idempotent:
            msg = "transactional.id needs enable.idempotence=true"
            raise ValueError(msg)
        if idempotent and acks != -1:
            msg = "enable.idempotence (and transactions) need acks=all"
            raise ValueError(msg)
        parsed = cls(
            bootstrap_servers=bootstrap,
            transactional_id=tid,
            transaction_timeout_ms=_int(values, "transaction.timeout.ms", 1),
            two_phase_commit=_bool(values, "transaction.two.phase.commit.enable"),
            linger_ms=_int(values, "linger.ms", 0),
            batch_size=_int(values, "batch.size", 1),
            acks=acks,
            request_timeout_ms=_int(values, "request.timeout.ms", 1),
            delivery_timeout_ms=_int(values, "delivery.timeout.ms", 1),
            max_block_ms=_int(values, "max.block.ms", 0),
            client_id=str(values["client.id"]),
            retry_backoff_ms=_int(values, "retry.backoff.ms", 0),
            enable_idempotence=idempotent,
            compression=_codec(values["compression.type"]),
            security=ClientSecurity.from_config(config),
            prepare_mode=_choice(values, "sharetxn.prepare.mode", PREPARE_MODES),
            resume_mode=_choice(values, "sharetxn.resume.mode", RESUME_MODES),
        )
        if parsed.delivery_timeout_ms < parsed.linger_ms + parsed.request_timeout_ms:
            msg = "delivery.timeout.ms must be at least linger.ms + request.timeout.ms"
            raise ValueError(msg)
        return parsed


def _int(values: Mapping[str, Any], key: str, minimum: int) -> int:
    raw = values[key]
    value = as_int(raw)
    if value is None:
        msg = f"{key} must be an integer, got {raw!r}"
        raise ValueError(msg)
    if value < minimum:
        msg = f"{key} must be >= {minimum}, got {value}"
        raise ValueError(msg)
    return value


def _choice(values: Mapping[str, Any], key: str, choices: Sequence[str]) -> str:
    raw = str(values[key]).lower()
    if raw not in choices:
        msg = f"{key} must be one of {', '.join(choices)}, got {values[key]!r}"
        raise ValueError(msg)
    return raw


def _codec(raw: Any) -> Codec:
    try:
        return codec_by_name(str(raw))
    except UnsupportedCompressionError as exc:
        raise ValueError(str(exc)) from None


def _bool(values: Mapping[str, Any], key: str) -> bool:
    raw = values[key]
    value = as_bool(raw)
    if value is None:
        msg = f"{key} must be true or false, got {raw!r}"
        raise ValueError(msg)
    return value


def _acks(raw: Any) -> int:
    text = str(raw).lower()
    if text in ("all", "-1"):
        return -1
    if text == "1":
        return 1
    if text == "0":
        msg = "acks=0 is not supported by this client (use 1 or all)"
        raise ValueError(msg)
    msg = f"acks must be all, -1 or 1, got {raw!r}"
    raise ValueError(msg)


HeadersArg = Mapping[str, bytes | str | None] | Sequence[tuple[str, bytes | str | None]] | None
