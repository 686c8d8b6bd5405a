"""Topic metadata: names, stable topic ids and partition counts, kept in a log.

Topic ids must be stable across restarts (Fetch v13+ addresses topics by id
only), so every create, partition increase and delete is a JSON record (without a key) in
the internal ``__cluster_metadata`` log, replayed on start.  The log also holds the producer
id blocks (``coordinator.producer_ids``), keyed records skipped here.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from coordinator.log.storage import PartitionLog
from txn.batch import build_batch
from txn.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidRequestError,
    InvalidTopicError,
    TopicAlreadyExistsError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from txn.ids import KAFKA_INTERNAL_TOPICS, RESERVED_TOPICS
from txn.topic_config_defs import ConfigOperation, list_type, parse_list
from txn.topic_configs import TOPIC_CONFIG_NAMES, invalid_topic_configs, unknown_topic_configs
from txn.topic_names import (
    collision,
    collision_message,
    has_collision_chars,
    topic_name_error,
    unified,
)
from txn.txn_log import read_records

#: Kafka's InvalidPartitionsException for a new topic's partition count of 0 or less.
NON_POSITIVE_PARTITIONS = "Number of partitions was set to an invalid non-positive value."


def partition_count_error(name: str, current: int, count: int) -> str | None:
    """Kafka's refusal of CreatePartitions to ``count`` for a topic of ``current`` partitions."""
    if count == current:
        return f"Topic already has {current} partition(s)."
    if count < current:
        return (
            f"The topic {name} currently has {current} partition(s); {count} would not be an"
            " increase."
        )
    return None


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    configs: dict[str, str] = field(default_factory=dict)
    internal: bool = False


def validate_topic_name(name: str) -> None:
    """Raise InvalidTopicError unless ``name`` is a legal topic name."""
    message = topic_name_error(name)
    if message is not None:
        raise InvalidTopicError(message)


class TopicRegistry:
    """All topics of the broker; every change is appended to the metadata log first."""

    def __init__(
        self, log: PartitionLog, rng: random.Random, defaults: Mapping[str, str] | None = None
    ) -> None:
        self._log = log
        self._rng = rng
        # The broker's defaults of the topic configs (for cross-checks and APPEND/SUBTRACT).
        self._defaults: Mapping[str, str] = defaults or {}
        self._by_name: dict[str, TopicInfo] = {}
        self._by_id: dict[uuid.UUID, TopicInfo] = {}
        # Names that contain '.' or '_' by their unified form (Kafka's controller keeps the
        # same map), in creation order: a new topic is checked against its few namesakes,
        # not against every topic.
        self._by_unified: dict[str, dict[str, None]] = {}
        # Counts the records applied: unchanged while no topic was created, grown, altered
        # or deleted (the share-group coordinator skips re-planning its groups then).
        self.version = 0
        # ``version`` when a topic was last created (a group's regexes are resolved again).
        self.created_version = 0
        # Kafka's internal topics created so far (``mark_internal``; coordinator.reserved_topics).
        self._internal_created: set[str] = set()
        # Dynamic broker configs by resource (this broker's id, "" the cluster default):
        # coordinator.broker_dynamic.
        self.broker_configs: dict[str, dict[str, str]] = {}
        # Client quotas by entity (its JSON form): coordinator.quotas.
        self.client_quotas: dict[str, dict[str, float]] = {}
        for _header, raw in log.batches(0):
            record = _decode(raw)
            if record is not None:
                self._apply(record)

    def _apply(self, record: dict[str, object]) -> None:
        kind = record["type"]
        name = str(record["name"])
        if kind == "internal":  # not a topic change: the version stays
            self._internal_created.add(name)
            return
        if kind == "broker_configs":  # not a topic change either
            configs = record.get("configs") or {}
            assert isinstance(configs, dict)
            self.broker_configs[name] = {str(k): str(v) for k, v in configs.items()}
            return
        if kind == "client_quotas":  # nor is this
            quotas = record.get("quotas") or {}
            assert isinstance(quotas, dict)
            if quotas:
                self.client_quotas[name] = {str(k): float(v) for k, v in quotas.items()}
            else:
                self.client_quotas.pop(name, None)
            return
        self.version += 1
        if kind == "topic":
            configs = record.get("configs") or {}
            assert isinstance(configs, dict)
            info = TopicInfo(
                name=name,
                topic_id=uuid.UUID(str(record["id"])),
                num_partitions=int(str(record["partitions"])),
                configs={str(k): str(v) for k, v in configs.items()},
                internal=bool(record.get("internal", False)),
            )
            if name not in self._by_name:
                self.created_version = self.version
            self._by_name[name] = info
            self._by_id[info.topic_id] = info
            if has_collision_chars(name):
                self._by_unified.setdefault(unified(name), {})[name] = None
        elif kind == "delete":
            old = self._by_name.pop(name, None)
            if old is not None:
                self._by_id.pop(old.topic_id, None)
                namesakes = self._by_unified.get(unified(name))
                if namesakes is not None:
                    namesakes.pop(name, None)
                    if not namesakes:
                        del self._by_unified[unified(name)]

    def _write(self, record: dict[str, object], now_ms: int) -> None:
        value = json.dumps(record, sort_keys=True).encode()
        self._log.append(build_batch([(None, value)], timestamp_ms=now_ms), now_ms)
        self._log.flush()
        self._apply(record)

    def get(self, name: str) -> TopicInfo | None:
        return self._by_name.get(name)

    def internal_created(self, name: str) -> bool:
        """Whether ``mark_internal(name)`` was recorded (now or before a restart)."""
        return name in self._internal_created

    def mark_internal(self, name: str, now_ms: int) -> bool:
        """Record that Kafka's internal topic ``name`` now exists (once; True if new).

        Only the fact is kept: the topic's shape is the broker config's
        (``coordinator.reserved_topics.listed_internal_topic``), its log the coordinator's."""
        if name in self._internal_created:
            return False
        self._write({"type": "internal", "name": name}, now_ms)
        return True

    def set_broker_configs(self, resource: str, configs: Mapping[str, str], now_ms: int) -> None:
        """Record the dynamic configs of BROKER ``resource`` (replacing its earlier ones)."""
        self._write({"type": "broker_configs", "name": resource, "configs": dict(configs)}, now_ms)

    def set_client_quotas(self, entity: str, quotas: Mapping[str, float], now_ms: int) -> None:
        """Record the client quotas of ``entity`` (replacing its earlier ones; none: gone)."""
        self._write({"type": "client_quotas", "name": entity, "quotas": dict(quotas)}, now_ms)

    def set_defaults(self, defaults: Mapping[str, str]) -> None:
        """The broker's topic-config defaults changed (dynamic broker configs)."""
        self._defaults = defaults

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def all(self) -> list[TopicInfo]:
        return sorted(self._by_name.values(), key=lambda t: t.name)

    def check_new(self, name: str, configs: Mapping[str, str | None] | None = None) -> None:
        """Raise what Kafka's controller answers for a new client topic ``name`` with
        ``configs``, in its order: the name, an existing topic of that name or one that
        collides with it on ``.``/``_``, then the configs (null values, unknown names, values)."""
        validate_topic_name(name)
        if name in RESERVED_TOPICS:  # the broker's own logs (coordinator.reserved_topics)
            raise InvalidTopicError(f"{name!r} is the name of one of the broker's own logs")
        if name in self._by_name:
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        namesakes = self._by_unified.get(unified(name), {})
        other = collision(name, [*namesakes, *KAFKA_INTERNAL_TOPICS])
        if other is not None:
            raise InvalidTopicError(collision_message(name, other))
        given = dict(configs or {})
        nulls = [k for k, v in given.items() if v is None]
        if nulls:
            raise InvalidConfigError(f"Null value not supported for topic configs: {nulls[0]}")
        if unknown := unknown_topic_configs(set(given)):
            raise InvalidConfigError(f"Unknown topic config name: {', '.join(unknown)}")
        values = {k: v for k, v in given.items() if v is not None}
        if bad := invalid_topic_configs(values, self._defaults):
            raise InvalidConfigError(bad)

    def create(
        self,
        name: str,
        num_partitions: int,
        now_ms: int,
        configs: dict[str, str] | None = None,
        *,
        internal: bool = False,
        validate_only: bool = False,
    ) -> TopicInfo:
        if not internal:
            self.check_new(name, configs)
        elif name in self._by_name:
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        if num_partitions < 1:
            raise InvalidPartitionsError(NON_POSITIVE_PARTITIONS)
        topic_id = uuid.UUID(int=self._rng.getrandbits(128), version=4)
        record: dict[str, object] = {
            "type": "topic",
            "name": name,
            "id": str(topic_id),
            "partitions": num_partitions,
            "configs": dict(configs or {}),
            "internal": internal,
        }
        if validate_only:
            return TopicInfo(name, topic_id, num_partitions, dict(configs or {}), internal)
        self._write(record, now_ms)
        return self._by_name[name]

    def add_partitions(
        self, name: str, total: int, now_ms: int, *, validate_only: bool = False
    ) -> None:
        info = self._by_name.get(name)
        if info is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        if (refused := partition_count_error(name, info.num_partitions, total)) is not None:
            raise InvalidPartitionsError(refused)
        if validate_only:
            return
        self._write(
            {
                "type": "topic",
                "name": name,
                "id": str(info.topic_id),
                "partitions": total,
                "configs": info.configs,
                "internal": info.internal,
            },
            now_ms,
        )

    def alter_configs(
        self,
        name: str,
        set_configs: dict[str, str],
        delete_configs: list[str],
        now_ms: int,
        *,
        validate_only: bool = False,
    ) -> TopicInfo:
        """SET and DELETE on a topic's configs (the legacy AlterConfigs replaces them all)."""
        ops: list[tuple[str, int, str | None]] = [
            (k, ConfigOperation.SET, v) for k, v in set_configs.items()
        ]
        ops += [(k, ConfigOperation.DELETE, None) for k in delete_configs]
        return self.incremental_alter_configs(name, ops, now_ms, validate_only=validate_only)

    def incremental_alter_configs(
        self,
        name: str,
        ops: Sequence[tuple[str, int, str | None]],
        now_ms: int,
        *,
        validate_only: bool = False,
    ) -> TopicInfo:
        """IncrementalAlterConfigs on a topic, as Kafka applies it: the operations in order
        on the topic's configs, then every value and the cross-checks validated."""
        info = self._by_name.get(name)
        if info is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        names = [n for n, _op, _v in ops]
        if len(set(names)) != len(names):
            raise InvalidRequestError("Error due to duplicate config keys")
        configs = dict(info.configs)
        for key, op, value in ops:
            if op == ConfigOperation.SET:
                if value is None:
                    raise InvalidRequestError(f"Null value not supported for : {key}")
                if key not in TOPIC_CONFIG_NAMES:
                    raise InvalidConfigError(f"Unknown topic config name: {key}")
                configs[key] = value
            elif op == ConfigOperation.DELETE:
                configs.pop(key, None)  # an unknown name is nothing to delete, as in Kafka
            elif op in (ConfigOperation.APPEND, ConfigOperation.SUBTRACT):
                verb = ConfigOperation(op).name
                if not list_type(key):
                    raise InvalidConfigError(
                        f"Can't {verb} to key {key} because its type is not LIST."
                    )
                old = parse_list(configs.get(key, self._defaults.get(key, "")))
                items = (value or "").split(",")
                if op == ConfigOperation.APPEND:
                    configs[key] = ",".join(old + [i for i in items if i not in old])
                else:
                    configs[key] = ",".join(i for i in old if i not in items)
            else:
                raise UnknownServerError(f"unknown config operation {op}")
        if bad := invalid_topic_configs(configs, self._defaults):
            raise InvalidConfigError(bad)
        if validate_only:
            return TopicInfo(name, info.topic_id, info.num_partitions, configs, info.internal)
        self._write(
            {
                "type": "topic",
                "name": name,
                "id": str(info.topic_id),
                "partitions": info.num_partitions,
                "configs": configs,
                "internal": info.internal,
            },
            now_ms,
        )
        return self._by_name[name]

    def delete(self, name: str, now_ms: int) -> TopicInfo:
        info = self._by_name.get(name)
        if info is None:  # Kafka's UnknownTopicOrPartitionException message
            raise UnknownTopicOrPartitionError("This server does not host this topic-partition.")
        self._write({"type": "delete", "name": name}, now_ms)
        return info


def _decode(raw: bytes) -> dict[str, object] | None:
    """A topic record (None for the log's other records: the producer id blocks, which have
    a key, ``coordinator.producer_ids``)."""
    ((key, value),) = read_records(raw)
    if key is not None:
        return None
    assert value is not None
    decoded = json.loads(value)
    assert isinstance(decoded, dict)
    return decoded
