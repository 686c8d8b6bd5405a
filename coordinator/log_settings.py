"""A topic's effective log settings: its configs over the broker's ``log.*`` defaults.

Kafka's precedence: a topic config wins; otherwise the broker default, where
``log.retention.ms`` beats ``log.retention.minutes`` beats ``log.retention.hours``,
``log.roll.ms`` beats ``log.roll.hours`` and ``log.roll.jitter.ms`` beats
``log.roll.jitter.hours``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from coordinator.log.cleaner import CleanerPolicy, cleaner_io_buffer_bytes, offset_map_entries
from coordinator.log.segments import RetentionPolicy
from coordinator.log.storage import LogConfig
from coordinator.log.timestamps import TimestampPolicy
from coordinator.partition import Partition
from txn.compression import Codec, decompressed_limit, topic_codec
from txn.config import BrokerConfig
from txn.topic_configs import cleanup_policy

_MINUTE_MS = 60 * 1000
_HOUR_MS = 60 * _MINUTE_MS


@dataclass(frozen=True, slots=True)
class TopicLogSettings:
    log: LogConfig
    retention: RetentionPolicy
    compact: bool
    file_delete_delay_ms: int
    cleaner: CleanerPolicy
    #: max.message.bytes (topic) or message.max.bytes (broker): the largest batch accepted
    max_message_bytes: int = 1048588
    #: message.timestamp.type and message.timestamp.{before,after}.max.ms
    timestamps: TimestampPolicy = field(default_factory=TimestampPolicy)

    @property
    def cleanup_policy(self) -> str:
        items = [("compact", self.compact), ("delete", self.retention.delete)]
        return ",".join(name for name, on in items if on)


def broker_retention_ms(config: BrokerConfig) -> int:
    ms = config.get_optional_int("log.retention.ms")
    if ms is not None:
        return ms
    minutes = config.get_optional_int("log.retention.minutes")
    if minutes is not None:
        return minutes * _MINUTE_MS
    return config.get_int("log.retention.hours") * _HOUR_MS


def broker_segment_ms(config: BrokerConfig) -> int:
    ms = config.get_optional_int("log.roll.ms")
    if ms is not None:
        return ms
    return config.get_int("log.roll.hours") * _HOUR_MS


def broker_segment_jitter_ms(config: BrokerConfig) -> int:
    ms = config.get_optional_int("log.roll.jitter.ms")
    if ms is not None:
        return ms
    return config.get_int("log.roll.jitter.hours") * _HOUR_MS


def reconfigure_partitions(partitions: Iterable[Partition], settings: TopicLogSettings) -> None:
    """A topic's open partitions take its new settings (they apply to the next append,
    retention pass or cleaning)."""
    for partition in partitions:
        partition.log.reconfigure(settings.log)
        partition.compacted = settings.compact
        partition.max_batch_bytes = settings.max_message_bytes
        partition.timestamps = settings.timestamps


def base_log_config(config: BrokerConfig) -> LogConfig:
    """The log settings the broker's ``log.*`` configs give every topic's partitions."""
    flush_ms = config.get_int("log.flush.interval.ms")
    return LogConfig(
        segment_bytes=config.get_int("log.segment.bytes"),
        index_interval_bytes=config.get_int("log.index.interval.bytes"),
        flush_interval_messages=config.get_int("log.flush.interval.messages"),
        flush_interval_ms=None if flush_ms < 0 else flush_ms,
    )


def compression_level(
    codec: Codec | None, topic_configs: Mapping[str, str], broker: BrokerConfig | None = None
) -> int | None:
    """The topic's ``compression.<codec>.level`` for the codec it stores batches with, else
    the broker's when set (None: neither set, or a codec without levels)."""
    if codec not in (Codec.GZIP, Codec.LZ4, Codec.ZSTD):
        return None
    name = f"compression.{codec.name.lower()}.level"
    raw = topic_configs.get(name)
    if raw is None and broker is not None and broker.is_set(name):
        raw = str(broker.get_int(name))
    return None if raw is None else int(raw.strip())


def topic_log_settings(
    base: LogConfig, broker: BrokerConfig, topic_configs: Mapping[str, str]
) -> TopicLogSettings:
    """Settings of a topic whose configs were validated (``invalid_topic_configs``).

    ``internal.segment.bytes`` (Kafka's testing override, no lower bound) wins over
    ``segment.bytes`` (at least 1 MiB), as in Kafka's LogConfig.segmentSize."""

    def number(name: str, default: int) -> int:
        raw = topic_configs.get(name)
        return default if raw is None else int(raw.strip())

    policy = cleanup_policy(
        topic_configs.get("cleanup.policy", broker.get_str("log.cleanup.policy"))
    )
    # A topic without compression.type takes the broker's (Kafka's server default).
    codec = topic_codec(topic_configs.get("compression.type", broker.get_str("compression.type")))
    log = LogConfig(
        segment_bytes=number("internal.segment.bytes", number("segment.bytes", base.segment_bytes)),
        segment_ms=number("segment.ms", broker_segment_ms(broker)),
        segment_jitter_ms=number("segment.jitter.ms", broker_segment_jitter_ms(broker)),
        index_interval_bytes=base.index_interval_bytes,
        flush_interval_messages=base.flush_interval_messages,
        flush_interval_ms=base.flush_interval_ms,
        compression=codec,
        compression_level=compression_level(codec, topic_configs, broker),
    )
    max_message_bytes = number("max.message.bytes", broker.get_int("message.max.bytes"))
    retention = RetentionPolicy(
        retention_ms=number("retention.ms", broker_retention_ms(broker)),
        retention_bytes=number("retention.bytes", broker.get_int("log.retention.bytes")),
        delete="delete" in policy,
    )
    return TopicLogSettings(
        log=log,
        retention=retention,
        compact="compact" in policy,
        file_delete_delay_ms=number(
            "file.delete.delay.ms", broker.get_int("log.segment.delete.delay.ms")
        ),
        cleaner=CleanerPolicy(
            delete_retention_ms=number(
                "delete.retention.ms", broker.get_int("log.cleaner.delete.retention.ms")
            ),
            min_cleanable_dirty_ratio=float(
                topic_configs.get(
                    "min.cleanable.dirty.ratio", broker.get_str("log.cleaner.min.cleanable.ratio")
                )
            ),
            min_compaction_lag_ms=number(
                "min.compaction.lag.ms", broker.get_int("log.cleaner.min.compaction.lag.ms")
            ),
            max_compaction_lag_ms=number(
                "max.compaction.lag.ms", broker.get_int("log.cleaner.max.compaction.lag.ms")
            ),
            max_decompressed_bytes=decompressed_limit(max_message_bytes),
            offset_map_entries=offset_map_entries(broker.get_int("log.cleaner.dedupe.buffer.size")),
            io_buffer_bytes=cleaner_io_buffer_bytes(
                broker.get_int("log.cleaner.io.buffer.size"), broker.get_int("log.cleaner.threads")
            ),
            max_io_buffer_bytes=max(max_message_bytes, broker.get_int("message.max.bytes")),
        ),
        max_message_bytes=max_message_bytes,
        timestamps=TimestampPolicy(
            log_append_time=topic_configs.get(
                "message.timestamp.type", broker.get_str("log.message.timestamp.type")
            )
            == "LogAppendTime",
            before_max_ms=number(
                "message.timestamp.before.max.ms",
                broker.get_int("log.message.timestamp.before.max.ms"),
            ),
            after_max_ms=number(
                "message.timestamp.after.max.ms",
                broker.get_int("log.message.timestamp.after.max.ms"),
            ),
        ),
    )


# topic config -> the broker configs that give its default (Kafka's synonyms)
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "cleanup.policy": ("log.cleanup.policy",),
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "retention.bytes": ("log.retention.bytes",),
    "segment.bytes": ("log.segment.bytes",),
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms",),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms",),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio",),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms",),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms",),
}


def default_topic_configs(broker: BrokerConfig) -> dict[str, tuple[str, bool]]:
    """The topic configs the broker acts on, as a topic without them gets them:
    name -> (value, whether a broker setting rather than the built-in default gives it)."""
    values = {
        "cleanup.policy": broker.get_str("log.cleanup.policy"),
        "retention.ms": str(broker_retention_ms(broker)),
        "retention.bytes": str(broker.get_int("log.retention.bytes")),
        "segment.bytes": str(broker.get_int("log.segment.bytes")),
        "segment.ms": str(broker_segment_ms(broker)),
        "segment.jitter.ms": str(broker_segment_jitter_ms(broker)),
        "file.delete.delay.ms": str(broker.get_int("log.segment.delete.delay.ms")),
        "delete.retention.ms": str(broker.get_int("log.cleaner.delete.retention.ms")),
        "min.cleanable.dirty.ratio": broker.get_str("log.cleaner.min.cleanable.ratio"),
        "min.compaction.lag.ms": str(broker.get_int("log.cleaner.min.compaction.lag.ms")),
        "max.compaction.lag.ms": str(broker.get_int("log.cleaner.max.compaction.lag.ms")),
    }
    builtin = BrokerConfig()
    return {
        name: (value, any(broker[key] != builtin[key] for key in _SYNONYMS[name]))
        for name, value in values.items()
    }
