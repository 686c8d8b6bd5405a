"""Retention and compaction benchmark (issue 18).

1. Broker start time against history length: a compacted topic holding the same live state
   (``--keys`` keys) after 1x, 10x and 100x as many writes, once compacted (the cleaner ran)
   and once not (``log.cleaner.enable=false``).  Start time is from process start to the
   port answering (``LocalBroker.start``), the median of ``--rounds``.
2. The same for the internal logs: the broker core (in process, on the real file log)
   writes a history of offset commits for the same groups, transactions of the same
   transactional ids (committed and aborted, each with a transactional offset commit) and
   share-group joins, acknowledgements and leaves, 1x, 10x and 100x over the same live
   state; then the logs are compacted (a day later -- past ``delete.retention.ms`` -- one
   cleaner pass and a share-state prune, as the broker's timers would) or left alone.
   Measured: the time to open the core on that directory (the coordinators' replay, in
   process) and the broker process start.
3. Produce throughput while the cleaner runs, as a ratio of the same produce with the
   cleaner off: keyed 100-byte records to a compacted topic with small segments and a
   cleaner pass every 200 ms.

Usage: ``python bench/retention.py [--keys 2000] [--rounds 3] [--history 3] [--records 100000]
[--skip-data] [--skip-throughput] [--json out.json]``; every figure is the median of
``--rounds`` interleaved rounds (``bench/toolkit.py``).  Figures in docs/performance.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import toolkit  # bench/toolkit.py, next to this file: the shared measurement plumbing
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from coordinator.broker import BrokerCore
from coordinator.group.offset_commands import Committer
from coordinator.launcher import LocalBroker
from coordinator.log.file_log import FileStorage
from coordinator.share.manager import PartitionAcks, ShareFetchOutcome
from coordinator.share.share_partition import AckBatch
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicIdPartition, TopicPartition

TOPIC = "table"
console = toolkit.make_console(100)


def _create(bootstrap: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": toolkit.quiet_logger()})
    for future in admin.create_topics([NewTopic(TOPIC, 1, 1, config=configs)]).values():
        future.result(30)


def _produce(bootstrap: str, keys: int, total: int) -> float:
    """Write ``total`` keyed records over ``keys`` keys; records per second."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    value = b"x" * 100
    start = time.perf_counter()
    for i in range(total):
        while True:
            try:
                producer.produce(TOPIC, value, key=b"key-%d" % (i % keys))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(120)
    return total / (time.perf_counter() - start)


def _start_time(data_dir: Path, config: dict[str, str]) -> float:
    """Seconds from starting a broker process on ``data_dir`` to its port answering."""
    broker = LocalBroker(data_dir=data_dir, config=config)
    begin = time.perf_counter()
    broker.start()
    elapsed = time.perf_counter() - begin
    broker.stop()
    return elapsed


def _measure(
    title: str, series: list[toolkit.Series], args: argparse.Namespace, results: dict[str, Any]
) -> None:
    toolkit.measure_series(
        series, rounds=args.rounds, retries=args.retries, console=console, unit="s"
    )
    console.print(toolkit.series_table(title, "seconds", series))
    results[title] = toolkit.series_json(series)


def start_times(args: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    keys = args.keys
    configs = {
        "cleanup.policy": "compact",
        "segment.bytes": "1048576",
        "min.cleanable.dirty.ratio": "0.01",
    }
    series = []
    for factor in (1, 10, 100):
        for cleaner in (True, False):
            data = tmp / f"data-{factor}-{cleaner}"
            data.mkdir()
            config = {
                "log.cleaner.enable": str(cleaner).lower(),
                "log.cleaner.backoff.ms": "500",
            }
            with LocalBroker(data_dir=data, config=config) as broker:
                _create(broker.bootstrap_servers, configs)
                _produce(broker.bootstrap_servers, keys, keys * factor)
                time.sleep(3 if cleaner else 0)  # let the cleaner catch up
            label = f"{factor}x, {'compacted' if cleaner else 'not compacted'}"
            series.append(
                toolkit.Series(
                    f"{factor}x-{'c' if cleaner else 'n'}",
                    label,
                    lambda data=data, config=config: _start_time(data, config),
                )
            )
    _measure(f"start time, {keys} live keys", series, args, results)


# The internal logs: small segments so the cleaner has closed segments to work on.
INTERNAL = {
    "offsets.topic.segment.bytes": "65536",
    "transaction.state.log.segment.bytes": "65536",
    "share.coordinator.state.topic.segment.bytes": "65536",
    "log.cleaner.enable": "false",  # the bench runs the pass itself, before measuring
}
LIVE_GROUPS, LIVE_TXN_IDS, PARTITIONS = 20, 20, 4
DAY_MS = 86_400_000


def _check(error: object) -> None:
    if error is not ErrorCode.NONE:
        raise RuntimeError(f"unexpected {error}")


def _write_internal_history(data: Path, rounds: int, compact: bool) -> None:
    """``rounds`` rounds over the same live state, written by the broker core itself."""
    clock = ManualClock(time.time_ns() // 1_000_000)
    core = BrokerCore(FileStorage(data), clock, BrokerConfig(INTERNAL))
    core.create_topic("in", PARTITIONS, 1)
    records = [(None, b"v%d" % i) for i in range(rounds + 1)]
    _check(
        core.produce(
            TopicPartition("in", 0), build_batch(records, timestamp_ms=clock.now_ms()), None
        ).error
    )
    info = core.topics.get("in")
    assert info is not None
    tip = TopicIdPartition(info.topic_id, 0)
    core.share.groups.alter_group_configs("sg", {"share.auto.offset.reset": "earliest"})
    for round_ in range(rounds):
        offsets = {TopicPartition("in", p): (round_, -1, None) for p in range(PARTITIONS)}
        for g in range(LIVE_GROUPS):
            for error in core.groups.commit_offsets(
                Committer(f"g{g}", -1, "", None), offsets
            ).values():
                _check(error)
        for t in range(LIVE_TXN_IDS):
            tid = f"t{t}"
            init = core.txn_coordinator.init_producer_id(tid, 60000)
            _check(init.error)
            pid, epoch = init.producer_id, init.producer_epoch
            _check(core.add_offsets_to_txn(tid, pid, epoch))
            for error in core.txn_offset_commit(
                tid, pid, epoch, f"tg{t}", -1, "", None, offsets
            ).values():
                _check(error)
            commit = (round_ + t) % 4 != 0
            _check(core.txn_coordinator.end_txn(tid, pid, epoch, commit, tv2=False).error)
            clock.advance(1)  # the markers
        member = f"m{round_}"
        _check(core.share.heartbeat("sg", member, 0, None, ["in"]).error)
        error, session = core.share.open_or_check_session("sg", member, 0, connection_id=round_)
        _check(error)
        assert session is not None
        session.add([tip])
        core.share.acquire("sg", member, session, 1, 1 << 20, ShareFetchOutcome(ErrorCode.NONE))
        core.share.acknowledge("sg", member, [PartitionAcks(tip, [AckBatch(round_, round_, [1])])])
        core.share.close_session("sg", member)
        _check(core.share.heartbeat("sg", member, -1, None, ["in"]).error)
    if compact:
        # The history is spread over more than delete.retention.ms (a day): markers and
        # tombstones older than that go, as they would on a broker that ran for a year.
        # Within one day the logs keep a marker per transaction and a tombstone per
        # deletion, as Kafka's do.
        clock.advance(DAY_MS + 60_000)
        core.share.persister.prune()
        core.run_cleaner()
    core.close()


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _open_time(data: Path) -> float:
    """Seconds to open the broker core on ``data`` (the coordinators' replay, in process)."""
    begin = time.perf_counter()
    core = BrokerCore(FileStorage(data), ManualClock(), BrokerConfig(INTERNAL))
    elapsed = time.perf_counter() - begin
    core.close()
    return elapsed


def internal_start_times(args: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    series = []
    for factor in (1, 10, 100):
        for compact in (True, False):
            data = tmp / f"internal-{factor}-{compact}"
            data.mkdir()
            _write_internal_history(data, args.history * factor, compact)
            name = "compacted" if compact else "not compacted"
            console.print(f"{factor}x, {name}: {_dir_bytes(data) / 2**20:.2f} MiB")
            key = f"{factor}x-{'c' if compact else 'n'}"
            series.append(
                toolkit.Series(f"{key}-open", f"{factor}x, {name}: open", partial(_open_time, data))
            )
            series.append(
                toolkit.Series(
                    f"{key}-start",
                    f"{factor}x, {name}: start",
                    partial(_start_time, data, INTERNAL),
                )
            )
    _measure(
        f"internal logs: {LIVE_GROUPS} groups x {PARTITIONS} offsets, {LIVE_TXN_IDS} "
        f"transactional ids, one share group; 1x = {args.history} rounds",
        series,
        args,
        results,
    )


def throughput(args: argparse.Namespace, results: dict[str, Any]) -> toolkit.Ratio:
    configs = {
        "cleanup.policy": "compact",
        "internal.segment.bytes": "262144",
        "min.cleanable.dirty.ratio": "0.01",
    }

    def produce(cleaner: bool) -> Callable[[], float]:
        def run() -> float:
            config = {"log.cleaner.enable": str(cleaner).lower(), "log.cleaner.backoff.ms": "200"}
            with LocalBroker(config=config) as broker:
                _create(broker.bootstrap_servers, configs)
                return _produce(broker.bootstrap_servers, args.keys, args.records)

        return run

    on = toolkit.Series("cleaner", "produce, cleaner on", produce(True))
    off = toolkit.Series("no-cleaner", "produce, cleaner off", produce(False))
    toolkit.measure_series(
        [on, off], rounds=args.rounds, retries=args.retries, console=console, unit="records/s"
    )
    console.print(toolkit.series_table("produce to a compacted topic", "records/s", [on, off]))
    results["throughput"] = toolkit.series_json([on, off])
    return toolkit.series_ratio("produce: cleaner on / off", on, off)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=2000)
    parser.add_argument("--history", type=int, default=3, help="internal-log rounds at 1x")
    parser.add_argument("--records", type=int, default=100_000, help="records of the produce")
    parser.add_argument("--skip-data", action="store_true", help="skip the data-topic table")
    parser.add_argument("--skip-throughput", action="store_true")
    args, run = toolkit.begin(parser, console, "retention.py", argv, rounds=3)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_data:
            start_times(args, Path(tmp), results)
        internal_start_times(args, Path(tmp), results)
    if not args.skip_throughput:
        ratio = throughput(args, results)
        console.print(toolkit.ratio_table([ratio]))
        results["ratios"] = toolkit.ratios_json([ratio])
    run.save(args, console, results)
    return 0


if __name__ == "__main__":
    toolkit.main_guard(main, console)
