"""The topic-level config names Kafka defines (its LogConfig), accepted on CreateTopics and
IncrementalAlterConfigs; anything else is INVALID_CONFIG, as in Kafka."""

from __future__ import annotations

from typing import Final

TOPIC_CONFIG_NAMES: Final = frozenset(
    {
        "cleanup.policy",
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "delete.retention.ms",
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "follower.replication.throttled.replicas",
        "index.interval.bytes",
        "leader.replication.throttled.replicas",
        "local.retention.bytes",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "max.message.bytes",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "preallocate",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "remote.storage.enable",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
        "segment.index.bytes",
        "segment.jitter.ms",
        "segment.ms",
        "unclean.leader.election.enable",
    }
)


def unknown_topic_configs(names: list[str] | set[str]) -> list[str]:
    """The names among ``names`` that are not topic configs, sorted."""
    return sorted(n for n in names if n not in TOPIC_CONFIG_NAMES)
