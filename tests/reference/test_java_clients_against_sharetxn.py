"""Apache Kafka's Java clients (4.4.0) against sharetxn, and the same run against Kafka.

``java/Interop.java`` drives ``KafkaProducer`` (idempotent; transactional commit, abort and
fencing), ``KafkaConsumer`` (read_committed; a consumer group with ``group.protocol``
classic and consumer), ``KafkaShareConsumer`` (implicit and explicit acknowledgement,
ACCEPT/RELEASE/REJECT, delivery count and its limit, record lock timeout) and ``Admin``
(topics, configs, share-group offsets list/alter/delete, transactions list/describe,
producers, abort, fence).  One JVM runs every scenario against a real sharetxn broker;
each test checks one scenario's observation.  The last test runs the program against
Apache Kafka and requires the same observations, except the documented differences.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from coordinator.launcher import LocalBroker
from tests.reference.differential.suite import SETTINGS
from tests.reference.java_clients import SCENARIOS, run_scenarios
from tests.reference.kafka import ReferenceKafka

pytestmark = pytest.mark.reference

#: "scenario.field" -> why sharetxn's observation differs (docs/conformance.md).
KNOWN_DIFFERENCES: dict[str, str] = {}


def _jdk_or_skip() -> None:
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("the Java client tests need a JDK (java and javac)")


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, Any]]]:
    _jdk_or_skip()
    config = {**SETTINGS, "group.initial.rebalance.delay.ms": "0"}
    data = tmp_path_factory.mktemp("java-sharetxn") / "data"
    with LocalBroker(data_dir=data, config=config) as broker:
        yield run_scenarios(broker.bootstrap_servers)


def _ok(observed: dict[str, dict[str, Any]], scenario: str) -> dict[str, Any]:
    row = observed[scenario]
    assert "error" not in row, f"{scenario}: {row['error']}"
    return row


def test_producer_idempotent(observed: dict[str, dict[str, Any]]) -> None:
    row = _ok(observed, "producer_idempotent")
    assert row["acked_per_partition"] == {"0": 100, "1": 100, "2": 100}
    assert row["read"] == row["distinct"] == 300
    assert row["end_offsets"] == {"0": 100, "1": 100, "2": 100}


def test_producer_transactions_commit_and_abort(observed: dict[str, dict[str, Any]]) -> None:
    row = _ok(observed, "producer_transactions")
    assert row["read_committed"] == 8
    assert row["read_committed_aborted"] == 0
    assert row["read_uncommitted"] == 12
    # Per partition: 6 records and 3 control markers (commit, abort, commit).
    assert row["end_offsets"] == {"0": 9, "1": 9}


def test_consumer_group_pattern(observed: dict[str, dict[str, Any]]) -> None:
    """``subscribe(SubscriptionPattern)`` (KIP-848 SubscribedTopicRegex) gets every partition
    of the topics the regex matches whole, and a pattern RE2J refuses fails the poll."""
    row = _ok(observed, "consumer_group_pattern")
    assert row["assigned"] == ["rx-eu-0", "rx-eu-1", "rx-us-0"]
    assert row["consumed"] == 10
    assert row["invalid_pattern"].startswith("InvalidRegularExpression")
    assert "is not a valid regular expression" in row["invalid_pattern"]


def test_producer_fencing(observed: dict[str, dict[str, Any]]) -> None:
    row = _ok(observed, "producer_fencing")
    # The new instance's InitProducerId bumped the epoch and aborted the zombie's
    # transaction; the zombie's next send is refused with the epoch error Kafka gives.
    assert row["zombie"] == "InvalidProducerEpochException"
    assert row["read_committed"] == ["live"]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_consumer_group(observed: dict[str, dict[str, Any]], protocol: str) -> None:
    row = _ok(observed, f"consumer_group_{protocol}")
    assert row["consumed"] == 10
    assert row["assigned"] == 2
    assert row["committed"] == {"0": 5, "1": 5}
    assert row["restart_assigned"] == 2
    assert row["after_restart"] == 0


def test_share_consumer_implicit(observed: dict[str, dict[str, Any]]) -> None:
    row = _ok(observed, "share_implicit")
    assert row["consumed"] == 10
    assert row["first_delivery_count"] == 1
    assert row["commit_errors"] == 0
    assert row["lock_timeout_ms"] == 30000
    # As Kafka: the start offset a write carries is the one before it (all 10 in one write).
    assert row["start_offsets"] == {"0": 0}
    assert row["after_restart"] == 0


def test_share_consumer_explicit_release_reject_delivery_limit(
    observed: dict[str, dict[str, Any]],
) -> None:
    row = _ok(observed, "share_explicit")
    assert row["first_round"] == 6
    # RELEASEd offsets 2 and 3 come back with delivery count 2; released again they reach
    # share.delivery.count.limit=2 and are archived; REJECTed 4 and 5 never come back.
    assert row["redelivered"] == {"2": 2, "3": 2}
    assert row["after_limit"] == 0
    # The last write (2 and 3 archived at the limit) carried the start offset before it.
    assert row["start_offsets"] == {"0": 2}


def test_share_consumer_lock_timeout(observed: dict[str, dict[str, Any]]) -> None:
    row = _ok(observed, "share_lock_timeout")
    assert row["lock_timeout_ms"] == 1000
    assert row["held"] == 3
    assert row["redelivered"] == {"0": 2, "1": 2, "2": 2}


def test_admin_topics_and_configs(observed: dict[str, dict[str, Any]]) -> None:
    row = _ok(observed, "admin_topics_configs")
    assert row == {**row, "partitions": 3, "listed": True, "retention.ms": "3600000"}
    assert row["deleted"] is True


def test_admin_share_group_offsets(observed: dict[str, dict[str, Any]]) -> None:
    row = _ok(observed, "admin_share_offsets")
    assert (row["state_active"], row["members"], row["state_empty"]) == ("Stable", 1, "Empty")
    assert row["offsets_after_consume"] == {"0": 0}  # the start offset before the write
    assert row["offsets_after_alter"] == {"0": 2}
    assert row["after_alter"] == [2, 3, 4]
    assert row["offsets_after_delete"] == {"0": None}
    assert row["group_deleted"] is True


def test_admin_transactions_producers_fence(observed: dict[str, dict[str, Any]]) -> None:
    row = _ok(observed, "admin_transactions")
    assert row["listed"] is True
    assert row["listed_state"] == row["described_state"] == "Ongoing"
    assert row["described_partitions"] == 1
    assert row["producers"] == 1
    assert row["producer_matches"] is True
    assert row["txn_start_offset"] == 0
    # Admin.abortTransaction sends WriteTxnMarkers, served to a client with CLUSTER_ACTION.
    assert row["abort"] == "ok"
    assert row["fenced_epoch_bumped"] is True
    assert row["after_fence_state"] == "Empty"
    assert row["zombie"] == "ProducerFencedException"
    assert row["read_committed"] == 0


def test_same_observations_as_apache_kafka(
    observed: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The same program against Apache Kafka 4.4 (same settings) observes the same."""
    node = ReferenceKafka(tmp_path_factory.mktemp("java-kafka"), settings=SETTINGS)
    try:
        node.start()
        kafka = run_scenarios(node.bootstrap_servers)
    finally:
        node.stop()
    open_differences: list[str] = []
    for scenario in SCENARIOS:
        ours, theirs = observed[scenario], kafka[scenario]
        for field in sorted((set(ours) | set(theirs)) - {"ms"}):
            if f"{scenario}.{field}" in KNOWN_DIFFERENCES:
                continue
            if ours.get(field) != theirs.get(field):
                open_differences.append(
                    f"{scenario}.{field}: sharetxn {ours.get(field)!r}, Kafka {theirs.get(field)!r}"
                )
    assert not open_differences, "\n".join(open_differences)
