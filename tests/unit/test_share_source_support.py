"""What the kafka-share source makes of a cluster's ApiVersions, and how it splits a held batch.

The ApiVersions below are the ones measured on Apache Kafka 4.4.0 (share APIs advertised,
``share.version`` finalized at 2, or dropped by ``kafka-features disable``) and on sharetxn.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from coordinator.protocol.api_versions import SUPPORTED
from producer.protocol.types import Record
from producer.spark.cluster_support import support_of
from producer.spark.held import split
from txn.kip1289_schema import KIP1289_FEATURE

KAFKA_44 = {76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 90: (0, 1), 93: (0, 0), 94: (0, 0)}


def test_support_of_kafka_and_sharetxn() -> None:
    on = support_of("k:9092", KAFKA_44, {"share.version": 2, "transaction.version": 2})
    assert on.share_groups_off is None and not on.kip1289  # keys 93/94 are other APIs there
    off = support_of("k:9092", KAFKA_44, {"transaction.version": 2})
    assert off.share_groups_off is not None and "share.version" in off.share_groups_off
    old = support_of("k:9092", {0: (0, 11)}, {})
    assert old.share_groups_off is not None and "ShareFetch" in old.share_groups_off
    ours = support_of(
        "s:9092", {k: (lo, hi) for k, (_, lo, hi) in SUPPORTED.items()}, {KIP1289_FEATURE: 1}
    )
    assert ours.share_groups_off is None and ours.kip1289


def test_split_keeps_order_and_bounds_the_task_count() -> None:
    records = [Record("t", 0, i, None, b"v") for i in range(7)]
    tasks = split(records, 4, 3)
    assert [len(t.records) for t in tasks] == [3, 2, 2]
    assert [r.offset for t in tasks for r in t.records] == list(range(7))
    assert {t.batch for t in tasks} == {4} and [t.index for t in tasks] == [0, 1, 2]
    assert len(split(records[:2], 4, 3)) == 2 and split([], 4, 3) == []
