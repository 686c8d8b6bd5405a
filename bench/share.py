"""Share groups (KIP-932): stock ShareConsumer throughput, and ShareFetch/ShareAcknowledge latency.

Everything is measured in one run, against one sharetxn broker on 127.0.0.1:

* Consumption of ``--records`` pre-produced records (``--record-size`` bytes, one
  ``--partitions`` partition topic, written once at start-up by an idempotent producer with
  ``linger.ms=5``, so the log holds batches of about 1 MB) by three stock confluent-kafka
  (librdkafka) clients:

  - (plain) ``Consumer``, ``assign()`` to every partition from offset 0, no group, no commits,
    ``consume(--poll-batch)`` in a loop: the yardstick;
  - (commit) ``ShareConsumer``, ``share.acknowledgement.mode=explicit``, every record
    ``acknowledge(ACCEPT)``-ed and ``commit_sync()`` after each non-empty poll: one
    ShareAcknowledge per ShareFetch;
  - (piggy) the same, without ``commit_sync()`` in the loop: the acknowledgements ride on the
    next poll's ShareFetch; one ``commit_sync()`` after the last record;
  - (commit-1M) as (commit), with ``fetch.max.bytes=1048576``: librdkafka sends
    ``fetch.max.bytes`` (52428800 by default) as the ShareFetch ``max_bytes``, and the broker
    reads that much of the log for every ShareFetch, whatever ``max_records`` is.

  - (kafka) as (commit), against Apache Kafka 4.4.0 (``tests/reference/``'s node, Kafka's
    defaults, 1 GB heap) reading its own copy of the topic, written the same way; it reads the
    topic once untimed first so that its JIT has compiled (``--no-kafka`` skips it).

  Each share measurement uses a new share group (``share.auto.offset.reset=earliest``, set with
  ``producer.admin.Admin.alter_group_configs``).  The clock runs from ``assign()``/
  ``subscribe()`` until the last record is read (and, for share consumers, acknowledged with
  the final ``commit_sync()``), so it covers connecting, joining the group and the first
  fetch.  Printed: records/s, MB/s, and the ratios to (plain) measured in the same rounds.

* Round-trip latency of a ShareFetch (``max_records`` = 100, and 1) followed by a
  ShareAcknowledge (ACCEPT) of exactly the records it acquired, sent by the project's wire
  client ``producer.protocol.client.KafkaClient`` with blocking calls (one request in flight).  The
  ShareFetch carries ``max_bytes`` as librdkafka sends it (``fetch.max.bytes``, 52428800), and
  also 1 MiB (``--max-bytes``).  Each ``max_records`` value reads its own topic, written in
  batches of that many records (``batch.num.messages``), so one fetch acquires one log batch.
  Each round joins a new share group with ShareGroupHeartbeat and opens a new share session
  (epoch 0 with the partitions, then 1, 2, ...).  A case (rtt) times ApiVersions v0 on the same
  connection: the floor of one request with this client.  Printed: p50/p99 in ms of the
  ShareFetch, of the ShareAcknowledge and of the whole cycle, pooled over the rounds.

Measurements are interleaved over ``--rounds`` rounds (the order rotates each round); figures
are medians over rounds (latency percentiles: over all cycles of the rounds kept).

Checks, which stop the run if they fail: the topics hold exactly the records produced (every
delivery succeeded, offsets contiguous, high watermarks); every consumer read each offset
exactly once, with no error; share records came with delivery count 1, every commit succeeded,
and afterwards the group's share-partition start offsets equal the high watermarks (everything
acknowledged); every ShareFetch acquired at least one record and every acknowledgement
succeeded.

As in ``bench/produce.py``: CPU of the broker process and of this client process per
wall-clock second, and the CPU that other processes of the machine used meanwhile; a
measurement during which they used more than 0.2 cores is taken again (``--retries``).

Example::

    python bench/share.py                          # defaults: about 90 s on 2 cores
    python bench/share.py --records 30000 --rounds 2 --cycles 100
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import delivery  # bench/delivery.py, next to this file: writing the topics
import share_latency  # bench/share_latency.py: the ShareFetch / ShareAcknowledge cycles
import toolkit  # bench/toolkit.py: the shared measurement plumbing
from confluent_kafka import (
    AcknowledgeType,
    Consumer,
    ShareConsumer,
    TopicPartition,
)
from rich.table import Table

LIBRDKAFKA_FETCH_MAX_BYTES = 52_428_800  # what librdkafka's ShareConsumer sends as max_bytes

console = toolkit.make_console(160)

Tick = Callable[[int], None]


# -- samples and cases --------------------------------------------------------------------------


@dataclass
class ReadSample(toolkit.Counted):
    """One consumption: ``records`` (``value_bytes`` of values) read in ``seconds``."""

    records: int
    value_bytes: int
    seconds: float
    first_record_s: float  # from assign()/subscribe() to the first record
    polls: int  # poll()/consume() calls that returned records
    switches: int  # times the partition changed between consecutive records
    broker_cpu_s: float
    client_cpu_s: float
    other_cpu_s: float
    # Wall-clock seconds, over the polls that returned records: inside poll()/consume(), in
    # this process's loop over the records (acknowledge() included), inside commit_sync().
    fetch_s: float = 0.0
    app_s: float = 0.0
    ack_s: float = 0.0

    def per_poll_ms(self, seconds: float) -> float:
        return seconds / max(self.polls, 1) * 1000

    @property
    def steady_rate(self) -> float:
        """Records per second after the first record: without connecting and joining."""
        return self.records / max(self.seconds - self.first_record_s, 1e-6)


@dataclass
class Case(toolkit.SampledCase):
    key: str
    label: str
    detail: str
    kind: str  # "plain", "commit", "piggy", "latency", "rtt"
    consumer_config: dict[str, Any] = field(default_factory=dict)
    max_records: int = 0
    max_bytes: int = 0
    topic: str = ""
    samples: list[Any] = field(default_factory=list)
    ctx: RunContext | None = None  # another broker than the run's (Apache Kafka)
    # Apache Kafka persists share-partition start offsets lazily, behind the acknowledged
    # records (docs/conformance.md), so the start-offset check applies to sharetxn only.
    check_start_offsets: bool = True


# -- consumption --------------------------------------------------------------------------------


class Seen:
    """Which offsets of each partition were read: each must be read exactly once."""

    def __init__(self, topic: delivery.Topic) -> None:
        self.topic = topic
        self.counts = [bytearray(hw) for hw in topic.high_watermarks]
        self.records = 0
        self.value_bytes = 0
        self.switches = 0
        self.last_partition = -1
        self.redelivered = 0

    def add(self, partition: int, offset: int, size: int) -> None:
        counts = self.counts[partition]
        if counts[offset] < 255:
            counts[offset] += 1
        self.records += 1
        self.value_bytes += size
        if partition != self.last_partition:
            if self.last_partition >= 0:
                self.switches += 1
            self.last_partition = partition

    def check(self, label: str) -> None:
        for index, counts in enumerate(self.counts):
            missing = counts.count(0)
            twice = len(counts) - missing - counts.count(1)
            if missing or twice:
                raise toolkit.CheckFailed(
                    f"{label}: partition {index}: {missing} offsets never read, "
                    f"{twice} read more than once"
                )
        if self.redelivered:
            raise toolkit.CheckFailed(f"{label}: {self.redelivered} records had delivery count > 1")


class Reading:
    """The clock of one consumption: from ``begin()`` (CPU snapshot, timer and deadline) to
    ``end()``; the first record's time and the polls that returned records in between."""

    def __init__(self, case: Case, args: argparse.Namespace, ctx: RunContext, tick: Tick) -> None:
        self.label = case.label
        self.timeout = args.timeout
        self.pid = ctx.pid
        self.seen = Seen(ctx.topic)
        self.tick = tick
        self.first = 0.0
        self.polls = 0
        self.fetch_s = self.app_s = self.ack_s = 0.0

    def begin(self) -> None:
        self.cpu0 = toolkit.CpuSnapshot.take(self.pid)
        self.start = time.perf_counter()
        self.deadline = self.start + self.timeout

    def polled(self, batch: Any, asked: float) -> float:
        """After a poll()/consume() called at ``asked`` (perf_counter); returns now."""
        now = time.perf_counter()
        if len(batch):
            self.polls += 1
            if not self.first:
                self.first = now - self.start
            else:  # the first poll also waits for connecting and joining
                self.fetch_s += now - asked
        return now

    def timed(self, batch: Any, since: float, acked: float | None = None) -> None:
        """After the loop over ``batch`` that started at ``since`` (and a commit_sync() that
        started at ``acked``)."""
        if len(batch):
            now = time.perf_counter()
            if acked is None:
                self.app_s += now - since
            else:
                self.app_s += acked - since
                self.ack_s += now - acked

    def add(self, m: Any) -> None:
        if m.error() is not None:
            raise toolkit.CheckFailed(f"{self.label}: consumer error {m.error()}")
        self.seen.add(m.partition(), m.offset(), len(m.value()))

    def step(self) -> None:
        """After each poll: progress, and the deadline."""
        seen = self.seen
        self.tick(seen.records)
        if time.perf_counter() > self.deadline:
            raise toolkit.CheckFailed(
                f"{self.label}: {seen.records}/{seen.topic.records} after {self.timeout} s"
            )

    def end(self) -> None:
        self.elapsed = time.perf_counter() - self.start
        self.cpu1 = toolkit.CpuSnapshot.take(self.pid)

    def sample(self) -> ReadSample:
        usage = self.cpu0.usage(self.cpu1)
        seen = self.seen
        return ReadSample(
            seen.records,
            seen.value_bytes,
            self.elapsed,
            self.first,
            self.polls,
            seen.switches,
            usage.broker,
            usage.client,
            usage.other,
            self.fetch_s,
            self.app_s,
            self.ack_s,
        )


def read_plain(
    case: Case, args: argparse.Namespace, ctx: RunContext, group: str, tick: Tick
) -> ReadSample:
    del group
    topic = ctx.topic
    reading = Reading(case, args, ctx, tick)
    seen = reading.seen
    consumer = Consumer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "group.id": f"bench-plain-{uuid.uuid4().hex[:8]}",  # required, never joined
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "logger": toolkit.quiet_logger("bench.share.rdkafka"),
        }
    )
    try:
        reading.begin()
        consumer.assign(
            [TopicPartition(topic.name, p, 0) for p in range(len(topic.high_watermarks))]
        )
        total = topic.records
        while seen.records < total:
            asked = time.perf_counter()
            batch = consumer.consume(args.poll_batch, 1.0)
            since = reading.polled(batch, asked)
            for m in batch:
                reading.add(m)
            reading.timed(batch, since)
            reading.step()
        reading.end()
    finally:
        consumer.close()
    seen.check(case.label)
    return reading.sample()


def read_share(
    case: Case, args: argparse.Namespace, ctx: RunContext, group: str, tick: Tick
) -> ReadSample:
    """(commit): commit_sync() after each non-empty poll; (piggy): acks ride the next poll."""
    topic = ctx.topic
    reading = Reading(case, args, ctx, tick)
    seen = reading.seen
    commit_each = case.kind == "commit"
    commit_errors: list[str] = []
    consumer = ShareConsumer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
            "logger": toolkit.quiet_logger("bench.share.rdkafka"),
            **case.consumer_config,
        }
    )

    def committed(result: dict[Any, Any]) -> None:
        commit_errors.extend(f"{tp}: {err}" for tp, err in result.items() if err is not None)

    try:
        acknowledge = consumer.acknowledge
        reading.begin()
        consumer.subscribe([topic.name])
        total = topic.records
        while seen.records < total:
            asked = time.perf_counter()
            batch = consumer.poll(1.0)
            since = reading.polled(batch, asked)
            for m in batch:
                reading.add(m)
                if m.delivery_count() != 1:
                    seen.redelivered += 1
                acknowledge(m, AcknowledgeType.ACCEPT)
            if commit_each and len(batch):
                acked = time.perf_counter()
                committed(consumer.commit_sync(30.0))
                reading.timed(batch, since, acked)
            else:
                reading.timed(batch, since)
            reading.step()
        if not commit_each:
            committed(consumer.commit_sync(30.0))
        reading.end()
    finally:
        consumer.close()
    if commit_errors:
        raise toolkit.CheckFailed(f"{case.label}: acknowledgements failed: {commit_errors[:3]}")
    seen.check(case.label)
    if case.check_start_offsets:
        check_all_acknowledged(ctx, case.label, group)
    return reading.sample()


def check_all_acknowledged(ctx: RunContext, label: str, group: str) -> None:
    """The group delivered every record up to the high watermarks (start offset plus the
    records delivered from it, as Kafka's DescribeShareGroupOffsets reports them)."""
    from producer.admin import Admin  # noqa: PLC0415

    with Admin(ctx.bootstrap) as admin:
        progress = admin.share_group_progress(group, [ctx.topic.name])
    got = sorted((tp.partition, o) for tp, o in progress.items())
    want = list(enumerate(ctx.topic.high_watermarks))
    if got != want:
        raise toolkit.CheckFailed(f"{label}: share-partition start offsets {got}, expected {want}")


# -- rounds -------------------------------------------------------------------------------------


@dataclass
class RunContext:
    bootstrap: str
    pid: int | None
    topic: delivery.Topic


def measure_once(case: Case, args: argparse.Namespace, ctx: RunContext, tick: Tick) -> Any:
    ctx = case.ctx or ctx
    plain = case.kind == "plain"
    group = "" if plain else toolkit.new_share_group(ctx.bootstrap, f"bench-share-{case.kind}")
    try:
        if case.kind == "plain":
            return read_plain(case, args, ctx, group, tick)
        if case.kind in ("commit", "piggy"):
            return read_share(case, args, ctx, group, tick)
        return share_latency.measure_latency(case, args, ctx.pid, ctx.bootstrap, group, tick)
    finally:
        if group:
            toolkit.delete_group(ctx.bootstrap, group)


def _describe(case: Case, sample: Any) -> str:
    if isinstance(sample, ReadSample):
        return (
            f"{sample.rate:>9,.0f} rec/s ({sample.records:,} in {sample.seconds:.2f} s, "
            f"first after {sample.first_record_s * 1000:.0f} ms)"
        )
    cycle = [f + a for f, a in zip(sample.fetch_s, sample.ack_s, strict=True)]
    p50, p99 = toolkit.pct(cycle, 50) * 1000, toolkit.pct(cycle, 99) * 1000
    if case.kind == "rtt":
        return f"p50 {p50:6.2f} ms, p99 {p99:6.2f} ms"
    return (
        f"cycle p50 {p50:6.2f} ms, p99 {p99:6.2f} ms "
        f"({sample.cycles} cycles, {sample.records / max(sample.cycles, 1):.0f} rec/cycle)"
    )


def run_rounds(cases: list[Case], args: argparse.Namespace, ctx: RunContext) -> None:
    def progress_of(case: Case) -> Callable[[int], tuple[float, str]]:
        if case.kind in ("latency", "rtt"):
            return toolkit.count_progress(args.cycles, "cycles")
        return toolkit.count_progress(ctx.topic.records, "records")

    toolkit.run_rounds(
        cases,
        rounds=args.rounds,
        retries=args.retries,
        console=console,
        measure=lambda case, tick: measure_once(case, args, ctx, tick),
        describe=_describe,
        progress_of=progress_of,
        key_width=9,
    )


# -- report -------------------------------------------------------------------------------------


def read_table(cases: list[Case], args: argparse.Namespace, topic: delivery.Topic) -> Table:
    table = toolkit.rate_table(
        f"Consumption of {topic.records:,} x {args.record_size} B records, "
        f"{len(topic.high_watermarks)} partitions (median over rounds)",
        "records",
        after=("after first\nrecords/s", "first\nrecord ms", "polls", "partition\nswitches"),
    )
    for case in cases:
        if not case.samples or case.kind not in ("plain", "commit", "piggy"):
            continue
        chosen = case.kept()
        table.add_row(
            f"({case.key}) {case.label}",
            *toolkit.rate_cells(case.samples, lambda s: s.value_bytes / s.seconds),
            f"{statistics.median(s.steady_rate for s in chosen):,.0f}",
            f"{statistics.median(s.first_record_s for s in chosen) * 1000:.0f}",
            f"{statistics.median(s.polls for s in chosen):.0f}",
            f"{statistics.median(s.switches for s in chosen):.0f}",
            *toolkit.cpu_cells(case.samples),
        )
    return table


def poll_table(cases: list[Case]) -> Table:
    """Where the time of one poll goes: wall-clock ms per poll that returned records."""
    table = Table(title="Wall-clock ms per poll that returned records (median over rounds)")
    table.add_column("case", no_wrap=True)
    for name in (
        "records\nper poll",
        "in poll()\nconsume()",
        "loop over\nthe records",
        "in\ncommit_sync()",
        "total",
    ):
        table.add_column(name, justify="right")
    for case in cases:
        if not case.samples or case.kind not in ("plain", "commit", "piggy"):
            continue
        chosen = case.kept()
        parts = [
            statistics.median(s.per_poll_ms(getattr(s, name)) for s in chosen)
            for name in ("fetch_s", "app_s", "ack_s")
        ]
        table.add_row(
            f"({case.key}) {case.label}",
            f"{statistics.median(s.records / max(s.polls, 1) for s in chosen):,.0f}",
            *(f"{ms:.2f}" for ms in parts),
            f"{sum(parts):.2f}",
        )
    return table


def ratios(cases: list[Case]) -> list[toolkit.Ratio]:
    """(name, ratio of the medians, lowest and highest ratio within one round)."""
    by_key = {c.key: c for c in cases}
    out: list[toolkit.Ratio] = []

    def add(name: str, num: str, den: str, attr: str = "rate") -> None:
        top, bottom = by_key.get(num), by_key.get(den)
        if not (top and bottom and top.samples and bottom.samples):
            return
        out.append((name, *toolkit.paired_ratio(top.samples, bottom.samples, attrgetter(attr))))

    add("(commit) ShareConsumer, commit_sync per poll / (plain) Consumer", "commit", "plain")
    add("(piggy) ShareConsumer, acks on next poll / (plain) Consumer", "piggy", "plain")
    add("(piggy) acks on next poll / (commit) commit_sync per poll", "piggy", "commit")
    add("(commit-1M) fetch.max.bytes=1 MiB / (plain) Consumer", "commit-1M", "plain")
    add("(commit-1M) fetch.max.bytes=1 MiB / (commit) default 50 MiB", "commit-1M", "commit")
    add("(commit@base) baseline: commit_sync per poll / (plain@base)", "commit@base", "plain@base")
    add("(piggy@base) baseline: acks on next poll / (plain@base)", "piggy@base", "plain@base")
    add("(commit) this tree / (commit@base) baseline", "commit", "commit@base")
    add("(piggy) this tree / (piggy@base) baseline", "piggy", "piggy@base")
    add("(plain) this tree / (plain@base) baseline", "plain", "plain@base")
    add("(commit) sharetxn / (kafka) Apache Kafka, same ShareConsumer", "commit", "kafka")
    add(
        "(commit) / (kafka), after the first record (no join)",
        "commit",
        "kafka",
        "steady_rate",
    )
    return out


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


# -- main ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=(
            "Share-group benchmark of the sharetxn broker: stock confluent-kafka ShareConsumer "
            "throughput (explicit ACCEPT of every record) as a ratio of a plain Consumer reading "
            "the same topic, and ShareFetch + ShareAcknowledge round-trip latency p50/p99 with "
            "the project's wire client. Everything on 127.0.0.1, in one run."
        ),
        epilog="example: python bench/share.py --records 30000 --rounds 2 --cycles 100",
    )
    toolkit.add_number_options(
        parser,
        [
            ("--records", 200_000, "records to pre-produce and read"),
            ("--record-size", 1024, "value bytes"),
            ("--partitions", 3, "topic partitions"),
            ("--poll-batch", 1000, "(plain) consume() batch size"),
            ("--cycles", 300, "fetch+ack cycles per latency measurement"),
        ],
    )
    parser.add_argument(
        "--max-records",
        default="100,1",
        help="ShareFetch max_records of the latency cases, comma-separated (100,1)",
    )
    parser.add_argument(
        "--max-bytes",
        default=f"{LIBRDKAFKA_FETCH_MAX_BYTES},{2**20}",
        help=(
            "ShareFetch max_bytes of the latency cases, comma-separated "
            f"({LIBRDKAFKA_FETCH_MAX_BYTES} as librdkafka sends it, and 1 MiB)"
        ),
    )
    parser.add_argument("--no-latency", action="store_true", help="skip the latency cases")
    parser.add_argument("--no-kafka", action="store_true", help="skip Apache Kafka (kafka)")
    parser.add_argument("--no-throughput", action="store_true", help="skip the consumers")
    parser.add_argument(
        "--baseline-tree",
        metavar="DIR",
        help=(
            "also measure (plain), (commit) and (piggy) against a second broker run from the "
            "sharetxn source tree DIR (e.g. an earlier commit: git archive REV | tar -x -C DIR), "
            "in the same rounds, on its own copy of the topic"
        ),
    )
    toolkit.add_broker_arguments(parser)
    toolkit.add_round_arguments(parser, rounds=5)
    return parser


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def build_cases(args: argparse.Namespace) -> list[Case]:
    cases: list[Case] = []
    if not args.no_throughput:
        cases += [
            Case(
                "plain",
                "Consumer",
                "confluent_kafka.Consumer, assign() all partitions from offset 0, no group "
                f"commits, consume({args.poll_batch})",
                "plain",
            ),
            Case(
                "commit",
                "Share, commit_sync",
                "ShareConsumer, share.acknowledgement.mode=explicit, acknowledge(ACCEPT) each "
                "record, commit_sync() after each non-empty poll (ShareAcknowledge)",
                "commit",
            ),
            Case(
                "piggy",
                "Share, acks on poll",
                "ShareConsumer, explicit, acknowledge(ACCEPT) each record, no commit_sync() in "
                "the loop: acks ride the next poll's ShareFetch; one commit_sync() at the end",
                "piggy",
            ),
            Case(
                "commit-1M",
                "Share, commit_sync, 1 MiB",
                "as (commit), with the ShareConsumer's fetch.max.bytes=1048576 (default "
                f"{LIBRDKAFKA_FETCH_MAX_BYTES}), which it sends as ShareFetch max_bytes",
                "commit",
                consumer_config={"fetch.max.bytes": 1_048_576},
            ),
        ]
    if not args.no_latency:
        for max_bytes in _ints(args.max_bytes):
            for max_records in _ints(args.max_records):
                small = max_bytes != LIBRDKAFKA_FETCH_MAX_BYTES
                key = f"f{max_records}" + ("s" if small else "")
                cases.append(
                    Case(
                        key,
                        f"max_records {max_records}, max_bytes {_mib(max_bytes)}",
                        f"ShareFetch max_records={max_records} max_bytes={max_bytes} on a topic "
                        f"of {max_records}-record batches, then ShareAcknowledge ACCEPT of "
                        "what it acquired",
                        "latency",
                        max_records=max_records,
                        max_bytes=max_bytes,
                    )
                )
        cases.append(
            Case(
                "rtt",
                "ApiVersions v0",
                "ApiVersions v0 on the same KafkaClient connection: one request's floor",
                "rtt",
                topic="",
            )
        )
    return cases


def start_kafka_case(stack: contextlib.ExitStack, args: argparse.Namespace, value: bytes) -> Case:
    """(kafka): Apache Kafka started, its copy of the topic written, its JIT warmed up."""
    import apache_kafka  # noqa: PLC0415 - bench/apache_kafka.py, only when used

    console.print(f"starting Apache Kafka {apache_kafka.KAFKA_VERSION} ...")
    bootstrap, pid = stack.enter_context(apache_kafka.running())
    toolkit.BROKER_PIDS.add(pid)
    console.print(f"writing {args.records:,} x {args.record_size} B records to Apache Kafka ...")
    topic = delivery.produce_topic(
        bootstrap, f"bench-share-{uuid.uuid4().hex[:8]}", args.partitions, args.records, value
    )
    case = Case(
        "kafka",
        "Kafka, Share, commit_sync",
        f"as (commit), against Apache Kafka {apache_kafka.KAFKA_VERSION} with its defaults "
        f"({apache_kafka.FLUSH_POLICY})",
        "commit",
        ctx=RunContext(bootstrap, pid, topic),
        check_start_offsets=False,
    )
    console.print("warming Apache Kafka up (one untimed read) ...")
    measure_once(case, args, case.ctx, lambda _n: None)  # type: ignore[arg-type]
    return case


@contextlib.contextmanager
def _tree_broker(tree: str, config: dict[str, str]) -> Iterator[tuple[str, int]]:
    """(bootstrap, pid) of a broker run from the source tree ``tree``, stopped on exit."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    import threading  # noqa: PLC0415

    ready = "sharetxn broker ready on "
    with tempfile.TemporaryDirectory(prefix="sharetxn-baseline-") as data_dir:
        cmd = [sys.executable, "-m", "coordinator", "--data-dir", data_dir]
        cmd += ["--listen", f"{toolkit.HOST}:0"]
        for key, value in config.items():
            cmd += ["--set", f"{key}={value}"]
        env = {**os.environ, "PYTHONPATH": tree}
        proc = subprocess.Popen(
            cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            assert proc.stdout is not None
            bootstrap = ""
            for line in proc.stdout:
                if line.startswith(ready):
                    bootstrap = line[len(ready) :].strip()
                    break
            if not bootstrap:
                raise toolkit.CheckFailed(f"the broker of {tree} did not start")
            # Keep draining its output so that it never blocks on a full pipe.
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            yield bootstrap, proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def start_baseline_cases(
    stack: contextlib.ExitStack, args: argparse.Namespace, value: bytes, cases: list[Case]
) -> list[Case]:
    """(plain@base), (commit@base), (piggy@base): the same consumers against the broker of
    ``--baseline-tree``, reading its own copy of the topic."""
    console.print(f"starting the baseline broker from {args.baseline_tree} ...")
    bootstrap, pid = stack.enter_context(
        _tree_broker(args.baseline_tree, toolkit.broker_config(args))
    )
    toolkit.BROKER_PIDS.add(pid)
    console.print(f"writing {args.records:,} x {args.record_size} B records to the baseline ...")
    topic = delivery.produce_topic(
        bootstrap, f"bench-share-{uuid.uuid4().hex[:8]}", args.partitions, args.records, value
    )
    ctx = RunContext(bootstrap, pid, topic)
    out = []
    for case in cases:
        if case.key in ("plain", "commit", "piggy"):
            out.append(
                Case(
                    f"{case.key}@base",
                    f"{case.label}, baseline",
                    f"{case.detail}; against the broker of {args.baseline_tree}",
                    case.kind,
                    consumer_config=dict(case.consumer_config),
                    ctx=ctx,
                )
            )
    return out


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.records < 1 or args.rounds < 1 or args.cycles < 1 or args.partitions < 1:
        console.print("[red]need --records, --rounds, --cycles and --partitions >= 1[/]")
        return 2
    if args.no_latency and args.no_throughput:
        console.print("[red]nothing to measure[/]")
        return 2
    toolkit.install_sigterm()
    broker_config = toolkit.broker_config(args)
    value = os.urandom(args.record_size)
    run = toolkit.announce(console, "share.py", argv)
    cases = build_cases(args)
    run_started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        broker, pid = toolkit.start_broker(stack, console, broker_config)
        bootstrap = broker.bootstrap_servers
        console.print(f"writing {args.records:,} x {args.record_size} B records ...")
        topic = delivery.produce_topic(
            bootstrap,
            f"bench-share-{uuid.uuid4().hex[:8]}",
            args.partitions,
            args.records if not args.no_throughput else 0,
            value,
        )
        latency_topics: dict[int, str] = {}
        for case in cases:
            if case.kind != "latency":
                continue
            if case.max_records not in latency_topics:
                # A cycle can take more than max_records: it ends on a batch boundary.
                records = (
                    math.ceil(args.cycles * case.max_records * 1.25)
                    + 2 * args.partitions * case.max_records
                )
                console.print(
                    f"writing {records:,} records in batches of {case.max_records} for latency ..."
                )
                latency_topics[case.max_records] = delivery.produce_topic(
                    bootstrap,
                    f"bench-share-lat{case.max_records}-{uuid.uuid4().hex[:6]}",
                    args.partitions,
                    records,
                    value,
                    **{"batch.num.messages": case.max_records},
                ).name
            case.topic = latency_topics[case.max_records]
        for case in cases:
            if case.kind == "rtt":
                case.topic = next(iter(latency_topics.values()), topic.name)
        ctx = RunContext(bootstrap, pid, topic)
        if args.baseline_tree and not args.no_throughput:
            cases += start_baseline_cases(stack, args, value, cases)
        if not args.no_kafka and not args.no_throughput:
            cases.append(start_kafka_case(stack, args, value))
        run_rounds(cases, args, ctx)
    run_seconds = time.perf_counter() - run_started
    for case in cases:
        console.print(f"({case.key}) {case.detail}")
    rows: list[toolkit.Ratio] = []
    if not args.no_throughput:
        console.print(read_table(cases, args, topic))
        console.print(
            "[dim]clock: from assign()/subscribe() to the last record read (share: and the "
            "final commit_sync()); MB/s: 10^6 bytes of record values per second; polls: "
            "calls that returned records; partition switches: changes of partition between "
            "consecutive records; after first: records/s from the first record on (without "
            "connecting and joining); cores: CPU seconds per wall-clock second of the broker and "
            "of this client process; us/rec: broker CPU per record[/]"
        )
        console.print(poll_table(cases))
        console.print(
            "[dim]from the second poll on (the first waits for connecting and joining): inside "
            "poll()/consume(), in this process's loop over the records it returned "
            "(acknowledge() included), and inside commit_sync()[/]"
        )
        rows = ratios(cases)
        console.print(toolkit.ratio_table(rows))
    if not args.no_latency:
        console.print(share_latency.latency_table(cases))
        console.print(
            "[dim]fetch: ShareFetch sent until its response is decoded; ack: ShareAcknowledge "
            "of exactly the acquired records; cycle: both; the client is the project's Python "
            "wire client (KafkaClient), whose encoding and decoding is in the figures; "
            "percentiles are nearest-rank over every cycle of the rounds kept[/]"
        )
    toolkit.warn_if_disturbed(console, cases)
    checks = ["topics hold exactly the records produced"]
    if not args.no_throughput:
        checks.append(
            "every consumer read each offset exactly once; share records had delivery count 1, "
            "every commit succeeded and the share-partition start offsets reached the high "
            "watermarks"
        )
    if not args.no_latency:
        checks.append("every timed ShareFetch acquired records and every ack succeeded")
    console.print(f"[dim]checks passed: {'; '.join(checks)}[/]")
    run.finish(
        args,
        console,
        run_seconds,
        {"cases": [_case_json(c) for c in cases], "ratios": toolkit.ratios_json(rows)},
    )
    return 0


def _case_json(case: Case) -> dict[str, Any]:
    data = toolkit.case_json(case)
    if case.samples and case.kind in ("latency", "rtt"):
        data["summary"] = share_latency.latency_summary(case)
    elif case.samples:
        data["median_records_per_s"] = case.median()
    return data


if __name__ == "__main__":
    toolkit.main_guard(main, console)
