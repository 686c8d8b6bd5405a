"""Producer id blocks live in ``__cluster_metadata`` (Kafka's ProducerIdsRecord), so
``__producer_ids`` is an ordinary topic name; an older data directory's ``__producer_ids``
log is migrated on load."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from coordinator.broker import BrokerCore
from coordinator.log.data_dir import DataDirError
from coordinator.log.file_log import FileStorage
from coordinator.log.memory_log import MemoryStorage
from coordinator.log.storage import LogConfig, PartitionLog
from coordinator.producer_ids import ProducerIdManager, holds_key, producer_id_key_record_key
from coordinator.reserved_topics import FORGET_CONFIG
from tests.unit.coordinator.test_reserved_topics import append_legacy_topic_record
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import CLUSTER_METADATA_TOPIC, LEGACY_PRODUCER_IDS_LOG, TopicPartition
from txn.txn_log import read_records

T0 = 1_700_000_000_000
NAME = LEGACY_PRODUCER_IDS_LOG


def core(storage: MemoryStorage, seed: int = 3, **config: str) -> BrokerCore:
    return BrokerCore(storage, ManualClock(T0), BrokerConfig(config), random.Random(seed))


def _older_version(storage: MemoryStorage, ids: int) -> list[int]:
    """What an older broker left: its producer id log, ``ids`` ids handed out from it."""
    legacy = storage.open_log(NAME, 0, LogConfig())
    manager = ProducerIdManager(legacy, scramble_rng=random.Random(9))
    return [manager.generate_producer_id() for _ in range(ids)]


def _key_of(log: PartitionLog) -> bytes:
    """The scrambling key of the ids (``coordinator.producer_ids``)."""
    for _header, batch in log.batches(0):
        for key, value in read_records(batch):
            if key == producer_id_key_record_key() and value is not None:
                return value[2:18]
    raise AssertionError("no key record")


def test_blocks_are_kept_in_the_metadata_log() -> None:
    storage = MemoryStorage()
    c = core(storage)
    first = [c.producer_ids.generate_producer_id() for _ in range(3)]
    assert (NAME, 0) not in storage.list_logs()
    assert holds_key(storage.open_log(CLUSTER_METADATA_TOPIC, 0, LogConfig()))
    again = core(storage, seed=4)
    more = [again.producer_ids.generate_producer_id() for _ in range(3)]
    assert not set(first) & set(more)


def test_an_older_directory_is_migrated_and_its_log_removed() -> None:
    storage = MemoryStorage()
    old = _older_version(storage, 1500)  # two blocks
    key = _key_of(storage.open_log(NAME, 0, LogConfig()))
    c = core(storage)
    assert _key_of(storage.open_log(CLUSTER_METADATA_TOPIC, 0, LogConfig())) == key
    assert (NAME, 0) not in storage.list_logs()
    assert c.topics.all() == []
    new = [c.producer_ids.generate_producer_id() for _ in range(1500)]
    assert not set(old) & set(new)
    # the key was copied, not drawn again: the older broker's permutation goes on
    assert c.producer_ids.next_producer_id == 3500  # its two blocks skipped, then ours
    restarted = core(storage, seed=5)
    assert not set(old + new) & {restarted.producer_ids.generate_producer_id() for _ in range(9)}


def test_a_client_can_create_produce_to_and_delete_the_topic() -> None:
    storage = MemoryStorage()
    c = core(storage)
    used = [c.producer_ids.generate_producer_id() for _ in range(3)]
    assert c.create_topic(NAME, 1, 1).error is ErrorCode.NONE
    tp = TopicPartition(NAME, 0)
    batch = build_batch([(b"k", b"v")], timestamp_ms=T0)
    assert c.produce(tp, batch, None).error is ErrorCode.NONE
    # a restart keeps the topic as a client's, and hands out fresh ids
    again = core(storage, seed=4)
    assert again.topics.get(NAME) is not None
    assert again.fetch(tp, 0, 1000, read_committed=False).error is ErrorCode.NONE
    assert again.partitions[tp].high_watermark == 1
    assert not set(used) & {again.producer_ids.generate_producer_id() for _ in range(3)}
    assert again.delete_topic(NAME).error is ErrorCode.NONE
    assert again.topics.get(NAME) is None


def test_a_client_created_topic_of_an_older_version_is_still_refused() -> None:
    """Before the migration a ``__producer_ids`` topic shares the older log's files."""
    storage = MemoryStorage()
    old = _older_version(storage, 3)
    metadata_log = storage.open_log(CLUSTER_METADATA_TOPIC, 0, LogConfig())
    append_legacy_topic_record(metadata_log, NAME, 1, T0)
    with pytest.raises(DataDirError) as raised:
        core(storage)
    assert f"'{NAME}'" in str(raised.value)
    forgot = core(storage, **{FORGET_CONFIG: "true"})
    assert forgot.topics.get(NAME) is None
    assert (NAME, 0) not in storage.list_logs()  # migrated
    assert not set(old) & {forgot.producer_ids.generate_producer_id() for _ in range(3)}


def test_an_older_data_directory_on_disk(tmp_path: Path) -> None:
    """The same with files: the directory ``__producer_ids-0`` is removed once copied."""
    storage = FileStorage(tmp_path)
    legacy = storage.open_log(NAME, 0, LogConfig())
    manager = ProducerIdManager(legacy)  # sequential, as before the ids were scrambled
    old = [manager.generate_producer_id() for _ in range(3)]
    storage.close()
    storage = FileStorage(tmp_path)
    c = BrokerCore(storage, ManualClock(T0), BrokerConfig(), random.Random(1))
    assert not (tmp_path / f"{NAME}-0").exists()
    assert c.producer_ids.next_producer_id == 1000  # the older block is skipped
    assert not set(old) & {c.producer_ids.generate_producer_id() for _ in range(3)}
    storage.close()
