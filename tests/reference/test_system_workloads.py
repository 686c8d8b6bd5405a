"""Kafka's system-test workloads against sharetxn, with the broker killed (-9) and restarted.

Modelled on Apache Kafka's system tests (``tests/kafkatest``), which drive the same tools
from ``kafka-tools`` 4.4.0 and check their JSON events:

- ``client/consumer_test.py`` (``test_broker_failure``, ``test_broker_rolling_bounce``):
  ``VerifiableProducer`` (acks=-1, idempotent) and a ``VerifiableConsumer`` group, the broker
  killed (or stopped with SIGTERM) twice: every acked record consumed, batches without
  gaps, no rebalance on failover, the last commit at the position.
- ``core/transactions_test.py`` (``hard_bounce`` of the brokers with ``check_order``, and
  of the clients): ``TransactionalMessageCopier`` copies a seeded topic transactionally
  while the broker, or each copier in turn, is killed; the output read read_committed
  (concurrently and afterwards) is the input, once (and in order, on one partition).
- ``client/share_consumer_test.py`` (broker bounce): ``VerifiableShareConsumer`` on a share
  group: every acked record consumed and acknowledged at least once; with an
  accept/release/reject pattern, nothing settled comes back after the kill.

A clean bounce must be clean: the broker stops within 10 s of SIGTERM.

sharetxn is a single node, so each kill takes the whole cluster away (Kafka's tests kill one
of three); the clients ride it out on their retries.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer import Admin
from producer.admin import TopicSpec
from tests.reference.kafka import java_available
from tests.reference.system_workloads import (
    ConsumerVerifier,
    Workload,
    acked,
    consumed_records,
    copied,
    copier_done,
    counted,
    properties,
    rejoin_reasons,
    share_count,
    share_offsets,
)
from txn.errors import ErrorCode

pytestmark = [pytest.mark.reference, pytest.mark.timeout(240)]

#: Down time of each kill: long enough for the clients to notice, short for CI.
DOWN_S = 1.0
#: The broker's last line after SIGTERM (not printed when killed).
STOPPED = "sharetxn.launcher: broker stopped cleanly"
#: Share-group settings of the differential suite: short locks and sessions.
BROKER_CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.min.session.timeout.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "500",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalBroker]:
    if not java_available():
        pytest.skip("Kafka's tools need a Java runtime: java is not on PATH")
    with LocalBroker(data_dir=tmp_path / "data", config=BROKER_CONFIG) as running:
        yield running


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    path = tmp_path / "logs"
    path.mkdir()
    return path


def _topic(broker: LocalBroker, prefix: str, partitions: int) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        assert admin.create_topics([TopicSpec(name, partitions, 1)])[name] == ErrorCode.NONE
    return name


def _clean_stops(broker: LocalBroker) -> int:
    return sum(STOPPED in line for line in broker.output)


def _bounce(broker: LocalBroker, clean: bool = False) -> None:
    """``kill -9`` the broker (or stop it with SIGTERM, ``clean``) and start it again on its
    data directory and port."""
    if clean:
        stopped = _clean_stops(broker)
        broker.stop(timeout_s=10)  # SIGTERM; SIGKILL after 10 s
        assert _clean_stops(broker) == stopped + 1, "no clean stop within 10 s of SIGTERM"
    else:
        broker.kill()
        time.sleep(DOWN_S)
    broker.start()


def _share_consumer(broker: LocalBroker, logs: Path, topic: str, *more: str) -> Workload:
    """kafkatest's VerifiableShareConsumer on a new share group, from the earliest offset,
    acknowledging synchronously."""
    return Workload(
        "VerifiableShareConsumer",
        [
            "--topic", topic,
            "--group-id", f"share-{uuid.uuid4().hex[:8]}",
            "--bootstrap-server", broker.bootstrap_servers,
            "--offset-reset-strategy", "earliest",
            "--acknowledgement-mode", "sync",
            *more,
        ],
        logs,
    )  # fmt: skip


def _producer(
    broker: LocalBroker,
    logs: Path,
    topic: str,
    messages: int,
    throughput: int,
    label: str = "",
    keys: int = 0,
) -> Workload:
    # What kafkatest's VerifiableProducer(enable_idempotence=True) writes to its config.
    settings = {
        "request.timeout.ms": "30000",
        "max.in.flight.requests.per.connection": "5",
        "retries": "1000000",
        "enable.idempotence": "true",
    }
    config = properties(logs / f"producer-{uuid.uuid4().hex[:6]}.properties", settings)
    return Workload(
        "VerifiableProducer",
        [
            "--topic", topic,
            "--bootstrap-server", broker.bootstrap_servers,
            "--max-messages", str(messages),
            "--throughput", str(throughput),
            "--acks", "-1",
            "--command-config", config,
            *(["--repeating-keys", str(keys)] if keys else []),
        ],
        logs,
        label,
    )  # fmt: skip


def _consumer(
    broker: LocalBroker,
    logs: Path,
    topic: str,
    protocol: str,
    *,
    read_committed: bool = False,
    label: str = "",
) -> Workload:
    settings = {"isolation.level": "read_committed"} if read_committed else {}
    config = properties(logs / f"consumer-{uuid.uuid4().hex[:6]}.properties", settings)
    args = [
        "--topic", topic,
        "--group-id", f"verifiable-{uuid.uuid4().hex[:8]}",
        "--group-protocol", protocol,
        "--bootstrap-server", broker.bootstrap_servers,
        "--reset-policy", "earliest",
        "--verbose",
        "--command-config", config,
    ]  # fmt: skip
    if protocol == "classic":
        args += ["--session-timeout", "10000"]
    return Workload("VerifiableConsumer", args, logs, label)


@pytest.mark.parametrize(
    ("protocol", "clean"),
    [("classic", False), ("consumer", False), ("consumer", True)],
    ids=["classic-kill", "consumer-kill", "consumer-clean"],
)
def test_producer_and_consumer_group_through_broker_bounces(
    broker: LocalBroker, logs: Path, protocol: str, clean: bool
) -> None:
    """``test_broker_failure`` with SIGKILL, and (``clean``) ``test_broker_rolling_bounce``."""
    topic = _topic(broker, "verifiable", 2)
    messages = 3000
    consumer = _consumer(broker, logs, topic, protocol).start()
    producer = _producer(broker, logs, topic, messages, throughput=400).start()
    try:
        for target in (500, 1500):
            consumer.wait(
                f"{target} records consumed",
                counted(consumer, "record_data", target),
                60,
            )
            before = ConsumerVerifier().replay(consumer.snapshot()).rebalances
            _bounce(broker, clean)
            consumer.wait(
                "records consumed after the restart",
                counted(consumer, "record_data", target + 300),
                60,
            )
            after = ConsumerVerifier().replay(consumer.snapshot()).rebalances
            assert after == before, (
                "broker failure should not cause a rebalance; the consumer's reasons: "
                f"{rejoin_reasons(logs)}; the broker's: "
                f"{[line for line in broker.output if 'group ' in line][-20:]}"
            )
        assert producer.finish(90) == 0, producer.stderr_tail()
        sent = acked(producer)
        consumer.wait(
            "consumption of every acked record",
            lambda: {(t, p, o) for t, p, o, _v in consumed_records(consumer)} >= set(sent),
            60,
        )
    finally:
        producer.stop()
        consumer.stop()

    assert producer.of("producer_send_error") == []
    assert len(sent) == messages
    assert sorted(int(v) for v in sent.values()) == list(range(messages))
    records = consumed_records(consumer)
    # Every acked record consumed, with the value the producer wrote, and nothing twice.
    assert {(t, p, o): v for t, p, o, v in records} == sent
    assert len(records) == len(sent), "records consumed twice"
    verifier = ConsumerVerifier().replay(consumer.snapshot())
    assert verifier.total_consumed == len(records)
    ends: dict[tuple[str, int], int] = {}
    for t, p, o in sent:
        ends[(t, p)] = max(ends.get((t, p), 0), o + 1)
    # The last commit (on close) is the position: the end of what the producer acked.
    assert verifier.global_position == ends
    assert verifier.committed == ends


def _seed(broker: LocalBroker, logs: Path, topic: str, messages: int) -> list[str]:
    """``seed_messages``: an idempotent VerifiableProducer fills ``topic``; its acked values
    in the order of their partition and offset."""
    # Keys spread the records over the partitions (unkeyed, all would go to one batch).
    seed = _producer(broker, logs, topic, messages, -1, label="seed", keys=64).start()
    assert seed.finish(60) == 0, seed.stderr_tail()
    values = [v for _tpo, v in sorted(acked(seed).items())]
    assert len(values) == messages
    return values


def _copier(
    broker: LocalBroker,
    logs: Path,
    group: str,
    source: str,
    partition: int,
    target: str,
    timeout_ms: int,
) -> Workload:
    """One copier of ``create_and_start_copiers`` (transactional id ``copier-N``)."""
    return Workload(
        "TransactionalMessageCopier",
        [
            "--broker-list", broker.bootstrap_servers,
            "--transactional-id", f"copier-{partition}",
            "--consumer-group", group,
            "--input-topic", source,
            "--input-partition", str(partition),
            "--output-topic", target,
            "--max-messages", "-1",
            "--transaction-size", "25",
            "--transaction-timeout", str(timeout_ms),
            "--use-group-metadata",
        ],
        logs,
        label=f"copier-{partition}",
    )  # fmt: skip


def _read_committed(broker: LocalBroker, logs: Path, topic: str, messages: int) -> list[str]:
    """``get_messages_from_topic``: the values a new read_committed group reads."""
    consumer = _consumer(
        broker, logs, topic, "classic", read_committed=True, label="verifying_consumer"
    ).start()
    try:
        consumer.wait("the output", lambda: len(consumer.of("record_data")) >= messages, 60)
        time.sleep(1)  # anything past the input shows up here
    finally:
        consumer.stop()
    return [v for *_tpo, v in consumed_records(consumer)]


@pytest.mark.parametrize("bounce", ["brokers", "clients"])
def test_transactional_copiers_hard_bounce(broker: LocalBroker, logs: Path, bounce: str) -> None:
    """``transactions_test``, hard_bounce: of the broker (``check_order``: one partition in
    and out, the output in the input's order), or of the copiers (two input partitions
    copied by two copiers into three output partitions), each ``kill -9`` in mid-copy."""
    messages = 3000
    partitions = (1, 1) if bounce == "brokers" else (2, 3)
    source = _topic(broker, "input-topic", partitions[0])
    target = _topic(broker, "output-topic", partitions[1])
    input_values = _seed(broker, logs, source, messages)
    group = f"transactions-test-consumer-group-{uuid.uuid4().hex[:6]}"
    # A copier killed after TxnOffsetCommit leaves its group's offsets pending: its successor
    # reads its position (OffsetFetch, require_stable) only once the coordinator has aborted
    # that transaction at its timeout (in Kafka too; initTransactions comes after).  Kafka's
    # test allows 40 s for that; a broker bounce needs the timeout to outlast the outage.
    timeout_ms = 40000 if bounce == "brokers" else 4000
    copiers = [
        _copier(broker, logs, group, source, i, target, timeout_ms) for i in range(partitions[0])
    ]
    concurrent = _consumer(
        broker, logs, target, "consumer", read_committed=True, label="concurrent_consumer"
    ).start()
    for copier in copiers:
        copier.start()
    try:
        if bounce == "brokers":
            for percent in (20.0, 60.0):
                copiers[0].wait(
                    f"{percent}% copied",
                    copied(copiers[0], percent),
                    60,
                )
                _bounce(broker)
        else:
            for _round in range(3):  # bounce_copiers
                for copier in copiers:
                    copier.wait("20% copied", copied(copier, 20.0), 60)
                    if not copier_done(copier):
                        copier.kill()
                        copier.start()
        for copier in copiers:
            copier.wait("end of the copy", partial(copier_done, copier), 120)
            assert copier.finish(30) == 0, copier.stderr_tail()
        concurrent.wait(
            "the whole output read_committed",
            lambda: len(concurrent.of("record_data")) >= messages,
            60,
        )
        time.sleep(1)  # anything past the input shows up here
    finally:
        for copier in copiers:
            copier.stop()
        concurrent.stop()

    output = _read_committed(broker, logs, target, messages)
    concurrently = [v for *_tpo, v in consumed_records(concurrent)]
    # No duplicates, and the input's messages (in order where there is one partition).
    assert len(output) == len(set(output)), "duplicates in the output"
    assert set(output) == set(input_values)
    assert len(concurrently) == len(set(concurrently)), "duplicates read concurrently"
    assert set(concurrently) == set(input_values)
    if bounce == "brokers":
        assert output == input_values
        assert concurrently == input_values


@pytest.mark.parametrize("clean", [False, True], ids=["kill", "clean"])
def test_share_consumer_through_broker_bounce(broker: LocalBroker, logs: Path, clean: bool) -> None:
    """``share_consumer_test``'s broker bounce: SIGKILL, or (``clean``) a rolling bounce."""
    topic = _topic(broker, "share", 1)
    messages = 2000
    consumer = _share_consumer(broker, logs, topic).start()
    producer = _producer(broker, logs, topic, messages, throughput=300).start()
    try:
        consumer.wait(
            "records consumed", lambda: share_count(consumer, "records_consumed") >= 300, 60
        )
        _bounce(broker, clean)
        assert producer.finish(90) == 0, producer.stderr_tail()
        sent = set(acked(producer))
        # An acknowledgement in flight at the kill may have been applied with its answer
        # lost (the tool reports it failed), so share_consumer_test counts unique records
        # consumed, not successful acknowledgements.
        consumer.wait(
            "consumption and acknowledgement of every acked record",
            lambda: (
                share_offsets(consumer, "records_consumed") >= sent
                and share_offsets(consumer, "offsets_acknowledged") >= sent
            ),
            90,
        )
    finally:
        producer.stop()
        consumer.stop()

    assert len(sent) == messages
    # share_consumer_test: at least once; every acked record consumed and acknowledged.
    assert share_offsets(consumer, "records_consumed") >= sent
    assert share_count(consumer, "records_consumed") >= len(sent)


def _delivered(consumer: Workload, sent: set[tuple[str, int, int]]) -> bool:
    """Every record of ``sent`` consumed, those released (offset % 3 == 1) five times."""
    deliveries: dict[tuple[str, int, int], int] = {}
    for event in consumer.of("records_consumed"):
        for part in event["partitions"]:
            for offset in part["offsets"]:
                key = (part["topic"], part["partition"], offset)
                deliveries[key] = deliveries.get(key, 0) + 1
    return all(deliveries.get(key, 0) >= (5 if key[2] % 3 == 1 else 1) for key in sent)


def test_share_acknowledgement_types_through_broker_kill(broker: LocalBroker, logs: Path) -> None:
    """``--ack-pattern accept,release,reject`` (by offset % 3) while the broker is killed:
    every record is delivered, one accepted or rejected by a successful acknowledgement is
    never delivered again (its state outlived the kill), and a released record comes back
    until the delivery count limit (5) archives it."""
    topic = _topic(broker, "share-acks", 1)
    messages = 1500
    consumer = _share_consumer(
        broker, logs, topic, "--ack-pattern", "accept,release,reject"
    ).start()
    producer = _producer(broker, logs, topic, messages, throughput=300).start()
    try:
        consumer.wait(
            "records consumed", lambda: share_count(consumer, "records_consumed") >= 300, 60
        )
        _bounce(broker)
        assert producer.finish(90) == 0, producer.stderr_tail()
        sent = set(acked(producer))
        consumer.wait(
            "every acked record consumed, a released one five times",
            lambda: _delivered(consumer, sent),
            90,
        )
        time.sleep(2)  # nothing else may come back
    finally:
        producer.stop()
        consumer.stop()

    assert len(sent) == messages
    deliveries: dict[tuple[str, int, int], int] = {}
    settled: set[tuple[str, int, int]] = set()
    redelivered = []
    for event in consumer.snapshot():
        if event.get("name") not in ("records_consumed", "offsets_acknowledged"):
            continue
        for part in event["partitions"]:
            for offset in part["offsets"]:
                key = (part["topic"], part["partition"], offset)
                if event["name"] == "records_consumed":
                    deliveries[key] = deliveries.get(key, 0) + 1
                    if key in settled:
                        redelivered.append(key)
                elif event["success"] and offset % 3 != 1:
                    settled.add(key)
    assert redelivered == [], "accepted or rejected records delivered again"
    # A settling acknowledgement in flight at the kill may have been applied with its answer
    # lost: such a record is delivered once, its acknowledgement reported failed.
    assert {key for key in sent if key[2] % 3 != 1} <= set(deliveries)
    released = [deliveries.get(key, 0) for key in sent if key[2] % 3 == 1]
    assert min(released) >= 5, "a released record archived before its delivery count limit"


def test_share_last_delivery_attempt_alone(broker: LocalBroker, logs: Path) -> None:
    topic = _topic(broker, "share-last", 1)
    messages = 300
    producer = _producer(broker, logs, topic, messages, throughput=-1).start()
    assert producer.finish(60) == 0, producer.stderr_tail()
    consumer = _share_consumer(
        broker, logs, topic, "--ack-pattern", "accept,release,reject"
    ).start()
    try:
        consumer.wait(
            "five deliveries of each released record",
            lambda: share_count(consumer, "records_consumed") >= messages + 4 * messages // 3,
            60,
        )
        time.sleep(1)
    finally:
        consumer.stop()
    deliveries: dict[int, int] = {}
    last_attempts = []
    for event in consumer.of("records_consumed"):
        offsets = [o for part in event["partitions"] for o in part["offsets"]]
        for offset in offsets:
            deliveries[offset] = deliveries.get(offset, 0) + 1
        if any(deliveries[o] == 5 for o in offsets):
            last_attempts.append(len(offsets))
    assert len(last_attempts) == messages // 3
    assert set(last_attempts) == {1}
