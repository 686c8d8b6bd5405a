"""The client quota entities and their values, as Kafka's controller keeps them
(``ClientQuotaControlManager``) and as DescribeClientQuotas matches them
(``ClientQuotasImage``).

An entity is a set of (type, name) components: ``user``, ``client-id`` or ``ip``, a name of
None being the type's default (``<default>`` in kafka-configs.sh).  Each change of an entity's
values is one record in ``__cluster_metadata`` (``TopicRegistry.set_client_quotas``),
replayed when the broker starts.
"""

from __future__ import annotations

import ipaddress
import json
import math
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from txn.errors import ErrorCode
from txn.limits import INT32_MAX, LONG_MAX

__all__ = [
    "CLIENT_ID",
    "DEFAULT_NAME",
    "IP",
    "USER",
    "AlterEntry",
    "DescribeFilter",
    "Entity",
    "QuotaError",
    "decode_entity",
    "encode_entity",
    "entity_text",
    "match_entities",
    "validate_alterations",
]

USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"
#: How kafka-configs.sh and the broker's logs name a default entity.
DEFAULT_NAME: Final = "<default>"

PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
CONTROLLER_MUTATION_RATE: Final = "controller_mutation_rate"
CONNECTION_CREATION_RATE: Final = "connection_creation_rate"

#: Kafka's QuotaConfigs: the keys of user and client-id entities, and of IP entities, with
#: their types (LONG values must be whole numbers).
USER_CLIENT_KEYS: Final[Mapping[str, str]] = {
    PRODUCER_BYTE_RATE: "LONG",
    CONSUMER_BYTE_RATE: "LONG",
    REQUEST_PERCENTAGE: "DOUBLE",
    CONTROLLER_MUTATION_RATE: "DOUBLE",
}
IP_KEYS: Final[Mapping[str, str]] = {CONNECTION_CREATION_RATE: "INT"}

#: An entity: its components sorted by type (a name of None is the type's default).
Entity = tuple[tuple[str, str | None], ...]

MATCH_EXACT: Final = 0
MATCH_DEFAULT: Final = 1
MATCH_SPECIFIED: Final = 2


class QuotaError(Exception):
    """An error answered for a whole request or an entity: a code and Kafka's message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def entity_text(entity: Sequence[tuple[str, str | None]]) -> str:
    """Kafka's ``ClientQuotaEntity.toString``: ``ClientQuotaEntity(entries={user=alice})``."""
    inner = ", ".join(f"{t}={n if n is not None else 'null'}" for t, n in entity)
    return f"ClientQuotaEntity(entries={{{inner}}})"


def encode_entity(entity: Entity) -> str:
    """The entity as the metadata record's name (stable JSON)."""
    return json.dumps([list(c) for c in entity])


def decode_entity(text: str) -> Entity:
    return tuple(sorted((str(t), None if n is None else str(n)) for t, n in json.loads(text)))


@dataclass(frozen=True, slots=True)
class AlterEntry:
    """One entry of AlterClientQuotas: the entity as sent and its ops (value None: remove)."""

    entity: tuple[tuple[str, str | None], ...]
    ops: tuple[tuple[str, float | None], ...]


def _valid_ip(name: str | None) -> bool:
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return False
    return True


def _check_entity(entity: Mapping[str, str | None]) -> Mapping[str, str]:
    """Kafka's validateEntity and configKeysForEntityType: the keys the entity may set."""
    if not entity:
        raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    for kind, name in entity.items():
        if kind not in (USER, CLIENT_ID, IP):
            raise QuotaError(
                ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {kind}"
            )
        if name is not None and not name:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Empty {kind} not supported")
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            # Kafka's message, its missing space included.
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                "Invalid quota entity combination, IP entity shouldnot be combined with User"
                " or ClientId",
            )
        if not _valid_ip(entity[IP]):
            raise QuotaError(
                ErrorCode.INVALID_REQUEST, f"{entity[IP]} is not a valid IP or resolvable host."
            )
        return IP_KEYS
    return USER_CLIENT_KEYS


_INTEGRAL_MAX: Final[Mapping[str, tuple[float, str]]] = {
    "INT": (float(INT32_MAX), "an INT"),
    "LONG": (float(LONG_MAX), "a LONG"),
}


def _check_value(keys: Mapping[str, str], key: str, value: float) -> None:
    """Kafka's validateQuotaKeyValue."""
    kind = keys.get(key)
    if kind is None:
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
    if value <= 0.0:
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Quota {key} must be greater than 0")
    if kind in _INTEGRAL_MAX:
        largest, article = _INTEGRAL_MAX[kind]
        if value > largest:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                f"Proposed value for {key} is too large for {article}.",
            )
        if abs(math.fmod(value, 1.0)) > 1e-6:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"{key} cannot be a fractional value.")


def validate_alterations(
    entries: Sequence[AlterEntry], current: Mapping[Entity, Mapping[str, float]]
) -> tuple[dict[Entity, QuotaError | None], dict[Entity, dict[str, float]]]:
    """Each entity's result (None: accepted) and the entities whose values change, with
    their new values (empty: the entity is gone), as Kafka's ``alterClientQuotas``.

    As Kafka: an entity's components are a map (a repeated type: the last name); the
    results are one per entity; an entry repeating a key, or an entity altered twice, is
    answered "Ignoring duplicate entity" (the first alteration of an entity stays applied);
    an invalid key or value fails its entity, none of its keys applied."""
    results: dict[Entity, QuotaError | None] = {}
    changes: dict[Entity, dict[str, float]] = {}
    for entry in entries:
        parts = dict(entry.entity)
        entity: Entity = tuple(sorted(parts.items()))
        ops: dict[str, float | None] = {}
        for key, value in entry.ops:
            if key in ops:
                results[entity] = QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    f"Duplicate quota key {key} not updating quota for this entity "
                    f"{entity_text(entity)}",
                )
            else:
                ops[key] = value
        if entity in results:
            results[entity] = QuotaError(
                ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {entity_text(entity)}"
            )
            continue
        try:
            keys = _check_entity(parts)
            values = dict(current.get(entity, {}))
            for key, value in ops.items():
                if value is None:
                    values.pop(key, None)
                else:
                    _check_value(keys, key, value)
                    values[key] = value
        except QuotaError as exc:
            results[entity] = exc
            continue
        if values != dict(current.get(entity, {})):
            changes[entity] = values
        results[entity] = None
    return results, changes


@dataclass(frozen=True, slots=True)
class DescribeFilter:
    """One component of a DescribeClientQuotas filter."""

    entity_type: str
    match_type: int
    match: str | None


def match_entities(
    entities: Mapping[Entity, Mapping[str, float]],
    components: Sequence[DescribeFilter],
    strict: bool,
) -> list[Entity]:
    """The entities a DescribeClientQuotas filter selects (Kafka's ``ClientQuotasImage``)."""
    exact: dict[str, str | None] = {}
    typed: set[str] = set()
    for c in components:
        if not c.entity_type:
            raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if c.entity_type in exact or c.entity_type in typed:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                f"Entity type {c.entity_type} cannot appear more than once in the filter.",
            )
        if c.entity_type not in (IP, USER, CLIENT_ID):
            raise QuotaError(
                ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {c.entity_type}"
            )
        if c.match_type == MATCH_EXACT:
            if c.match is None:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                )
            exact[c.entity_type] = c.match
        elif c.match_type == MATCH_DEFAULT:
            if c.match is not None:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                )
            exact[c.entity_type] = None
        elif c.match_type == MATCH_SPECIFIED:
            if c.match is not None:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                )
            typed.add(c.entity_type)
        else:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Unknown match type {c.match_type}")
    if (IP in exact or IP in typed) and (
        USER in exact or USER in typed or CLIENT_ID in exact or CLIENT_ID in typed
    ):
        raise QuotaError(
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be"
            " used with user or clientId filter component.",
        )
    if not exact and not typed:
        return [] if strict else list(entities)
    found: list[Entity] = []
    for entity in entities:
        parts = dict(entity)
        if any(t not in parts or parts[t] != name for t, name in exact.items()):
            continue
        if any(t not in parts for t in typed):
            continue
        if strict and len(parts) != len(exact) + len(typed):
            continue
        found.append(entity)
    return found
