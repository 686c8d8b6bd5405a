"""segment.jitter.ms: each segment rolls up to that much earlier than segment.ms, by an amount
drawn when it is created (Kafka's LogConfig.randomSegmentJitter)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from coordinator.log.file_log import FileLog
from coordinator.log.memory_log import MemoryLog
from coordinator.log.segments import roll_jitter_ms, should_roll
from coordinator.log.storage import LogConfig, PartitionLog
from coordinator.log_settings import topic_log_settings
from txn.batch import build_batch, parse_header
from txn.config import BrokerConfig

T0 = 1_700_000_000_000


def test_the_jitter_is_drawn_below_the_smaller_of_jitter_and_segment_ms() -> None:
    rng = random.Random(3)
    assert roll_jitter_ms(LogConfig(segment_ms=1000), rng) == 0  # unset
    drawn = {
        roll_jitter_ms(LogConfig(segment_ms=100, segment_jitter_ms=5000), rng) for _ in range(500)
    }
    assert drawn <= set(range(100)) and len(drawn) > 50
    drawn = {
        roll_jitter_ms(LogConfig(segment_ms=10_000, segment_jitter_ms=10), rng) for _ in range(200)
    }
    assert drawn == set(range(10))


def test_should_roll_takes_the_jitter_off_segment_ms() -> None:
    batch = parse_header(build_batch([(b"k", b"v")], timestamp_ms=T0 + 700))
    config = LogConfig(segment_ms=1000)
    rule = {"size": 10, "first_timestamp_ms": T0, "created_ms": T0, "batch": batch}
    assert not should_roll(**rule, now_ms=T0, config=config)  # type: ignore[arg-type]
    assert should_roll(**rule, now_ms=T0, config=config, jitter_ms=301)  # type: ignore[arg-type]
    assert not should_roll(**rule, now_ms=T0, config=config, jitter_ms=300)  # type: ignore[arg-type]


def _spans(log: PartitionLog) -> list[int]:
    for n in range(400):
        log.append(build_batch([(b"k", b"v")], timestamp_ms=T0 + 10 * n), T0 + 10 * n)
    segments = log.segments()
    return [b.base_offset - a.base_offset for a, b in itertools.pairwise(segments)]


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_segments_roll_earlier_by_their_own_jitter(tmp_path: Path, kind: str) -> None:
    """Batches 10 ms apart, segment.ms 1000: without jitter every segment holds 101 batches
    (rolled once a batch is more than 1000 ms after the first); with segment.jitter.ms 1000
    each rolls after a span of its own, never longer."""
    plain = LogConfig(segment_ms=1000)
    jittered = LogConfig(segment_ms=1000, segment_jitter_ms=1000)

    def make(config: LogConfig, name: str) -> PartitionLog:
        if kind == "memory":
            return MemoryLog(config)
        return FileLog(tmp_path / name, config)

    assert set(_spans(make(plain, "a-0"))) == {101}
    spans = _spans(make(jittered, "b-0"))
    assert all(1 <= span <= 101 for span in spans) and len(set(spans)) > 3


def test_the_topic_config_reaches_the_log() -> None:
    settings = topic_log_settings(LogConfig(), BrokerConfig(), {"segment.jitter.ms": "250"})
    assert settings.log.segment_jitter_ms == 250
    assert topic_log_settings(LogConfig(), BrokerConfig(), {}).log.segment_jitter_ms == 0


def test_the_broker_defaults_give_a_topic_without_it_its_jitter() -> None:
    """log.roll.jitter.ms, else log.roll.jitter.hours (Kafka's LogConfig synonyms); the topic's
    own segment.jitter.ms wins."""
    hours = BrokerConfig({"log.roll.jitter.hours": 2})
    assert topic_log_settings(LogConfig(), hours, {}).log.segment_jitter_ms == 7_200_000
    both = BrokerConfig({"log.roll.jitter.hours": 2, "log.roll.jitter.ms": 500})
    assert topic_log_settings(LogConfig(), both, {}).log.segment_jitter_ms == 500
    topic = {"segment.jitter.ms": "250"}
    assert topic_log_settings(LogConfig(), both, topic).log.segment_jitter_ms == 250
