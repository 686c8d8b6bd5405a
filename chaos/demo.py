"""``sharetxn demo``: transactional copy through a broker that is killed midway.

The demo starts an embedded broker, writes N records with unique values to an
input topic, and copies them to an output topic with a stock transactional
producer.  Each transaction carries a batch of records and, in the record
headers, their source positions; a random share of transactions is aborted
on purpose, and once, with a transaction open, the broker is killed with
SIGKILL and restarted on the same data directory.  The copier resumes from
the positions stored *inside* committed transactions (read back with a
read_committed consumer), so progress and output are atomic.  Finally a
stock read_committed consumer checks that the output holds every input
record exactly once.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from coordinator.launcher import LocalBroker

# librdkafka logs every refused reconnect while the broker is down; the demo expects that.
_QUIET = logging.getLogger("sharetxn.demo.librdkafka")
_QUIET.setLevel(logging.CRITICAL)
_QUIET.propagate = False

INPUT = "demo-input"
OUTPUT = "demo-output"


@dataclass
class DemoStats:
    records: int = 0
    partitions: int = 0
    committed_txns: int = 0
    aborted_txns: int = 0
    failed_txns: int = 0
    broker_kills: int = 0
    producer_restarts: int = 0
    output_records: int = 0
    distinct_copied: int = 0
    duplicates: int = 0
    lost: int = 0
    aborted_records_visible: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.duplicates == 0 and self.lost == 0 and self.aborted_records_visible == 0


def summary_table(stats: DemoStats) -> Table:
    table = Table(title="transactional copy with a broker kill -9")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows: list[tuple[str, Any]] = [
        ("input records", stats.records),
        ("partitions", stats.partitions),
        ("transactions committed", stats.committed_txns),
        ("transactions aborted on purpose", stats.aborted_txns),
        ("transactions failed by the kill", stats.failed_txns),
        ("broker kill -9 + restart", stats.broker_kills),
        ("producer re-initialisations", stats.producer_restarts),
        ("output records (read_committed)", stats.output_records),
        ("duplicates", stats.duplicates),
        ("lost", stats.lost),
        ("aborted records visible", stats.aborted_records_visible),
        ("seconds", f"{stats.seconds:.1f}"),
    ]
    for name, value in rows:
        style = ""
        if name in ("duplicates", "lost", "aborted records visible"):
            style = "green" if value == 0 else "bold red"
        table.add_row(name, f"[{style}]{value}[/]" if style else str(value))
    return table


def run_demo(
    *,
    records: int,
    partitions: int,
    batch: int,
    abort_rate: float,
    seed: int,
    kill: bool,
    data_dir: str | None,
    console: Console | None = None,
) -> DemoStats:
    console = console or Console(quiet=True)
    rng = random.Random(seed)
    stats = DemoStats(records=records, partitions=partitions)
    started = time.monotonic()
    with LocalBroker(data_dir=data_dir) as broker:
        bootstrap = broker.bootstrap_servers
        _create_topics(bootstrap, partitions)
        _produce_input(bootstrap, records, partitions)
        copier = _Copier(bootstrap, partitions, rng, stats)
        kill_at = records // 2 if kill else None
        with Progress(
            TextColumn("copying"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as progress:
            task = progress.add_task("copy", total=records)
            while copier.done < records:
                kill_now = kill_at is not None and copier.done >= kill_at
                if kill_now:
                    kill_at = None
                    copier.step(
                        batch, abort_rate, before_commit=lambda: _kill_and_restart(broker, stats)
                    )
                else:
                    copier.step(batch, abort_rate)
                progress.update(task, completed=copier.done)
        copier.close()
        _verify(bootstrap, records, stats)
    stats.seconds = time.monotonic() - started
    return stats


def _kill_and_restart(broker: LocalBroker, stats: DemoStats) -> None:
    broker.kill()
    stats.broker_kills += 1
    broker.start()


def _create_topics(bootstrap: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": _QUIET})  # type: ignore[dict-item]
    futures = admin.create_topics([NewTopic(t, partitions, 1) for t in (INPUT, OUTPUT)])
    for future in futures.values():
        future.result(30)


def _produce_input(bootstrap: str, records: int, partitions: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "logger": _QUIET,
        }
    )
    for i in range(records):
        producer.produce(INPUT, value=f"record-{i:08d}".encode(), partition=i % partitions)
        if i % 1000 == 0:
            producer.poll(0)
    if producer.flush(60) != 0:
        msg = "input records were not all acknowledged"
        raise RuntimeError(msg)


class _Copier:
    """Copies input to output in transactions; positions live in the committed output."""

    def __init__(
        self, bootstrap: str, partitions: int, rng: random.Random, stats: DemoStats
    ) -> None:
        self.bootstrap = bootstrap
        self.partitions = partitions
        self.rng = rng
        self.stats = stats
        self.transactional_id = f"demo-copier-{uuid.uuid4().hex[:8]}"
        self.producer: Producer | None = None
        self.consumer: Consumer | None = None
        self.positions: dict[int, int] = {}
        self._restart()

    @property
    def done(self) -> int:
        return sum(self.positions.values())

    def _restart(self) -> None:
        if self.consumer is not None:
            self.consumer.close()
        self.producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "logger": _QUIET,
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": 10000,
                "linger.ms": 5,
            }
        )
        self.producer.init_transactions(60)
        self.positions = _committed_positions(self.bootstrap, self.partitions)
        self.consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "logger": _QUIET,
                "group.id": "demo-copier",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 100,
            }
        )
        self.consumer.assign(
            [TopicPartition(INPUT, p, self.positions.get(p, 0)) for p in range(self.partitions)]
        )

    def _read(self, count: int) -> list[Any]:
        assert self.consumer is not None
        out: list[Any] = []
        deadline = time.monotonic() + 10
        while len(out) < count and time.monotonic() < deadline:
            msgs = self.consumer.consume(count - len(out), 0.5)
            out.extend(m for m in msgs if m.error() is None)
        return out

    def step(self, batch: int, abort_rate: float, before_commit: Any = None) -> None:
        producer = self.producer
        assert producer is not None
        msgs = self._read(batch)
        if not msgs:
            return
        try:
            producer.begin_transaction()
            for m in msgs:
                producer.produce(
                    OUTPUT,
                    value=m.value(),
                    partition=m.partition(),
                    headers=[
                        ("src-partition", str(m.partition()).encode()),
                        ("src-offset", str(m.offset()).encode()),
                    ],
                )
            if before_commit is not None:
                producer.flush(10)
                before_commit()
            if self.rng.random() < abort_rate:
                producer.abort_transaction(30)
                self.stats.aborted_txns += 1
                self._rewind(msgs)
                return
            producer.commit_transaction(30)
            self.stats.committed_txns += 1
            for m in msgs:
                self.positions[m.partition()] = max(
                    self.positions.get(m.partition(), 0), m.offset() + 1
                )
        except KafkaException:
            # Outcome unknown (e.g. the broker died mid-commit): start a new producer, which
            # fences the old one and aborts its open transaction, and re-read the positions
            # committed in the output.
            self.stats.failed_txns += 1
            self.stats.producer_restarts += 1
            self._restart()

    def _rewind(self, msgs: list[Any]) -> None:
        assert self.consumer is not None
        firsts: dict[int, int] = {}
        for m in msgs:
            firsts[m.partition()] = min(firsts.get(m.partition(), m.offset()), m.offset())
        for p, off in firsts.items():
            self.consumer.seek(TopicPartition(INPUT, p, off))

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close()
        if self.producer is not None:
            self.producer.flush(10)


def _read_all(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "logger": _QUIET,
            "group.id": f"demo-verify-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    ends: dict[int, int] = {}
    for p in range(partitions):
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
        ends[p] = high
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[Any] = []
    positions = dict.fromkeys(range(partitions), 0)
    deadline = time.monotonic() + 60
    while any(positions[p] < ends[p] for p in positions) and time.monotonic() < deadline:
        for m in consumer.consume(1000, 0.5):
            if m.error() is None:
                out.append(m)
                positions[int(m.partition() or 0)] = int(m.offset() or 0) + 1
        for p in positions:
            tp = consumer.position([TopicPartition(topic, p)])[0]
            if tp.offset >= 0:
                positions[p] = max(positions[p], tp.offset)
    consumer.close()
    return out


def _committed_positions(bootstrap: str, partitions: int) -> dict[int, int]:
    positions: dict[int, int] = {}
    for m in _read_all(bootstrap, OUTPUT, partitions, "read_committed"):
        headers = dict(m.headers() or [])
        p = int(headers["src-partition"])
        positions[p] = max(positions.get(p, 0), int(headers["src-offset"]) + 1)
    return positions


def _verify(bootstrap: str, records: int, stats: DemoStats) -> None:
    msgs = _read_all(bootstrap, OUTPUT, stats.partitions, "read_committed")
    counts = Counter(m.value() for m in msgs)
    expected = {f"record-{i:08d}".encode() for i in range(records)}
    stats.output_records = len(msgs)
    stats.distinct_copied = len(counts)
    stats.duplicates = sum(c - 1 for c in counts.values() if c > 1)
    stats.lost = len(expected - set(counts))
    stats.aborted_records_visible = len(set(counts) - expected)
