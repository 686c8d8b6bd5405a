"""Transactional share acknowledgements (KIP-1289): consume-transform-produce throughput.

Everything is measured in one run, against one sharetxn broker on 127.0.0.1 (its default
config: fsync on every append), with the project's client library (``producer``):

* At start-up ``--records`` values of ``--record-size`` bytes are written once to an input
  topic of ``--partitions`` partitions (1 by default) by a stock idempotent confluent-kafka
  producer, in log batches of ``--input-batch`` (100) records.
* Each measurement reads the first N of them through a new share group and writes one output
  per input to a new output topic of the same partition count (key ``partition:offset``,
  value the input value reversed), in units of K records (``--txn-sizes``, 1, 100 and 1000):

  - (txnK) ``ShareConsumer`` in ``share.acknowledgement.mode=transactional`` and a
    ``TransactionalProducer`` with a ``transactional.id``.  One transaction per K records:
    ``begin_transaction``, K ``send``, ``send_share_acks_to_transaction(acknowledgements(),
    group_metadata())``, ``commit_transaction``: exactly once.
  - (ackK) the same loop without transactions: ``ShareConsumer`` in ``explicit`` mode and an
    idempotent ``TransactionalProducer`` without ``transactional.id``.  Per K records: K
    ``send``, ``flush()``, ``acknowledge(ACCEPT)`` of the K inputs, ``commit_sync()``
    (ShareAcknowledge): at least once, the yardstick.

  N is ``--records`` (15,000) for K > 1 and ``--records-k1`` (500) for K = 1, so that the
  default run stays short.  ``max.poll.records`` is the smallest multiple of K and of
  ``--input-batch`` that is at least 500, so that every poll returns whole units of K (the
  broker rounds acquisition up to a log batch).  The clock starts when the first poll returns
  records (joining the group, InitProducerId and that first ShareFetch are outside it) and
  stops after the last commit.

* Commit latency: every ``commit_transaction`` (and, for the explicit loop, every ``flush()``
  and ``commit_sync()``) is timed, next to the fsync latency of the broker's data directory:
  for ``--fsync-seconds`` (1 s), 128-byte appends to a file there about every millisecond,
  each followed by a timed ``os.fsync``, as one more measurement of every round (while
  nothing else runs).

Measurements are interleaved over ``--rounds`` rounds (the order rotates each round); the
throughput figures are medians over rounds, the ratio (txnK)/(ackK) is taken from the same
rounds, and latency percentiles are nearest-rank over every sample of the rounds kept.

Checks, which stop the run if they fail: the input topic holds exactly the records
produced; every record came with delivery count 1, every ``commit_sync`` and every
transaction succeeded; a stock confluent-kafka ``Consumer`` with
``isolation.level=read_committed`` reads from each output topic every expected key exactly
once and nothing else; afterwards the share group's start offsets equal the records
processed per partition (the acknowledgements took effect).

As in ``bench/produce.py`` and ``bench/share.py``: CPU of the broker process and of this
client process per wall-clock second, and the CPU that other processes of the machine used
meanwhile; a measurement during which they used more than 0.2 cores is taken again
(``--retries``).  The broker is stopped on exit, also on Ctrl-C and SIGTERM.

Example::

    python bench/txn_acks.py                           # defaults: about 2 minutes on 2 cores
    python bench/txn_acks.py --rounds 1 --records 5000 --records-k1 200
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import delivery  # bench/delivery.py: writing the input topic
import toolkit  # bench/toolkit.py, next to this file: the shared measurement plumbing
from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as CkTopicPartition
from rich.table import Table

GOAL_RATIO = 0.85  # at the goal's K: transactional / non-transactional throughput
GOAL_TXN_SIZE = 1000
MIN_POLL_RECORDS = 500  # the client's default max.poll.records
FSYNC_WRITE_BYTES = 128
FSYNC_PAUSE_S = 0.001

console = toolkit.make_console(160)

Tick = Callable[[int], None]


# -- samples and cases --------------------------------------------------------------------------


@dataclass
class Sample(toolkit.Counted):
    """One consume-transform-produce measurement, or one series of fsyncs (kind "fsync").

    Per unit of K records: ``ack_s`` is ``send_share_acks_to_transaction`` (txn) or
    ``commit_sync`` (explicit); ``commit_s`` is ``commit_transaction`` (txn) or ``flush``
    (explicit).  For kind "fsync", ``commit_s`` holds the fsync times.
    """

    records: int
    units: int
    seconds: float
    ack_s: list[float]
    commit_s: list[float]
    polls: int
    split_polls: int  # polls made while a unit was half read: should be 0
    broker_cpu_s: float
    client_cpu_s: float
    other_cpu_s: float


@dataclass
class Case(toolkit.SampledCase):
    key: str
    label: str
    detail: str
    kind: str  # "txn", "explicit", "fsync"
    txn_size: int = 0
    records: int = 0
    max_poll_records: int = 0
    samples: list[Sample] = field(default_factory=list)


@dataclass
class RunContext:
    bootstrap: str
    pid: int | None
    data_dir: Path
    input_topic: str
    partitions: int
    warmup_topic: str


# -- helpers ------------------------------------------------------------------------------------


def _round_up(n: int, *multiples: int) -> int:
    step = math.lcm(*multiples)
    return max(step, math.ceil(n / step) * step)


def _key(partition: int, offset: int) -> bytes:
    return b"%d:%d" % (partition, offset)


# -- the consume-transform-produce loop ---------------------------------------------------------


def run_ctp(case: Case, args: argparse.Namespace, ctx: RunContext, tick: Tick) -> Sample:
    """One measurement of (txnK) or (ackK); checks its outputs and acknowledgements."""
    from producer import AcknowledgeType, ShareConsumer, TransactionalProducer  # noqa: PLC0415

    transactional = case.kind == "txn"
    group = toolkit.new_share_group(ctx.bootstrap, f"bench-txnacks-{case.kind}")
    out_topic = f"bench-txnacks-out-{case.key}-{uuid.uuid4().hex[:8]}"
    toolkit.create_topics(ctx.bootstrap, [out_topic], ctx.partitions)
    try:
        consumer = ShareConsumer(
            {
                "bootstrap.servers": ctx.bootstrap,
                "group.id": group,
                "share.acknowledgement.mode": "transactional" if transactional else "explicit",
                "max.poll.records": case.max_poll_records,
            }
        )
        producer_config: dict[str, Any] = {"bootstrap.servers": ctx.bootstrap}
        if args.batch_size:
            producer_config["batch.size"] = args.batch_size
        if transactional:
            producer_config["transactional.id"] = f"bench-txnacks-{uuid.uuid4().hex[:12]}"
        producer = TransactionalProducer(producer_config)
        try:
            if transactional:
                producer.init_transactions()
            else:
                # The idempotent producer gets its producer id with its first send: do that
                # outside the clock, as init_transactions is for the transactional one.
                producer.send(ctx.warmup_topic, b"").result(args.timeout)
            sample, processed = _loop(
                case, args, ctx, consumer, producer, out_topic, tick, AcknowledgeType.ACCEPT
            )
        finally:
            with contextlib.suppress(Exception):
                consumer.close()
            with contextlib.suppress(Exception):
                producer.close()
        check_outputs(ctx, case.label, out_topic, processed, args.record_size)
        check_start_offsets(ctx, case.label, group, processed)
        return sample
    finally:
        toolkit.delete_group(ctx.bootstrap, group)
        toolkit.delete_topic(ctx.bootstrap, out_topic)


def _loop(
    case: Case,
    args: argparse.Namespace,
    ctx: RunContext,
    consumer: Any,
    producer: Any,
    out_topic: str,
    tick: Tick,
    accept: Any,
) -> tuple[Sample, dict[int, list[int]]]:
    """Read N records in units of K; returns the sample and the input offsets per partition."""
    transactional = case.kind == "txn"
    k = case.txn_size
    total = case.records
    clock = time.perf_counter
    acknowledge = consumer.acknowledge
    send = producer.send
    processed: dict[int, list[int]] = {}
    ack_s: list[float] = []
    commit_s: list[float] = []
    pending: list[Any] = []  # records read, output not yet sent
    acked = 0  # pending[:acked] are acknowledge()d already (only before a split poll)
    done = 0
    polls = 0
    split_polls = 0
    redelivered = 0
    consumer.subscribe([ctx.input_topic])
    start = 0.0
    cpu0: toolkit.CpuSnapshot | None = None
    deadline = time.monotonic() + args.timeout
    while done < total:
        if time.monotonic() > deadline:
            raise toolkit.CheckFailed(
                f"{case.label}: {done}/{total} records after {args.timeout} s"
            )
        want = min(k, total - done)
        while len(pending) < want:
            if pending:
                # Every record of a poll must be acknowledged before the next poll. These all
                # belong to the next unit; in explicit mode their acks ride on this ShareFetch.
                split_polls += 1
                for record in pending[acked:]:
                    acknowledge(record, accept)
                acked = len(pending)
            got = consumer.poll(1.0)
            if got:
                polls += 1
                if cpu0 is None:
                    cpu0 = toolkit.CpuSnapshot.take(ctx.pid)
                    start = clock()
                pending.extend(got)
            elif time.monotonic() > deadline:
                raise toolkit.CheckFailed(
                    f"{case.label}: {done}/{total} records after {args.timeout} s"
                )
        unit, pending = pending[:want], pending[want:]
        redelivered += sum(1 for record in unit if record.delivery_count != 1)
        acked_before = acked
        acked = 0
        if transactional:
            producer.begin_transaction()
            try:
                for record in unit:
                    send(out_topic, record.value[::-1], key=_key(record.partition, record.offset))
                for record in unit[acked_before:]:
                    acknowledge(record, accept)  # recorded only
                t0 = clock()
                producer.send_share_acks_to_transaction(
                    consumer.acknowledgements(), consumer.group_metadata()
                )
                t1 = clock()
                producer.commit_transaction()
                t2 = clock()
            except Exception as exc:
                with contextlib.suppress(Exception):
                    producer.abort_transaction()
                raise toolkit.CheckFailed(f"{case.label}: transaction failed: {exc!r}") from exc
            ack_s.append(t1 - t0)
            commit_s.append(t2 - t1)
        else:
            futures = [
                send(out_topic, record.value[::-1], key=_key(record.partition, record.offset))
                for record in unit
            ]
            t0 = clock()
            producer.flush()
            t1 = clock()
            failed = [f.exception() for f in futures if f.exception() is not None]
            if failed:
                raise toolkit.CheckFailed(
                    f"{case.label}: {len(failed)} sends failed: {failed[0]!r}"
                )
            for record in unit[acked_before:]:
                acknowledge(record, accept)
            t2 = clock()
            results = consumer.commit_sync()
            t3 = clock()
            errors = [f"{tp}: {err}" for tp, err in results.items() if err is not None]
            if errors:
                raise toolkit.CheckFailed(f"{case.label}: commit_sync failed: {errors[:3]}")
            commit_s.append(t1 - t0)
            ack_s.append(t3 - t2)
        for record in unit:
            processed.setdefault(record.partition, []).append(record.offset)
        done += len(unit)
        if len(ack_s) % 8 == 0 or done == total:
            tick(done)
    elapsed = clock() - start
    cpu1 = toolkit.CpuSnapshot.take(ctx.pid)
    assert cpu0 is not None
    if redelivered:
        raise toolkit.CheckFailed(f"{case.label}: {redelivered} records had delivery count > 1")
    other = (cpu1.machine - cpu0.machine) - (cpu1.ours - cpu0.ours)
    sample = Sample(
        records=done,
        units=len(ack_s),
        seconds=elapsed,
        ack_s=ack_s,
        commit_s=commit_s,
        polls=polls,
        split_polls=split_polls,
        broker_cpu_s=cpu1.broker - cpu0.broker,
        client_cpu_s=cpu1.client - cpu0.client,
        other_cpu_s=max(other, 0.0),
    )
    return sample, processed


# -- checks -------------------------------------------------------------------------------------


def check_outputs(
    ctx: RunContext, label: str, topic: str, processed: dict[int, list[int]], size: int
) -> None:
    """A stock read_committed Consumer sees every expected output exactly once, nothing else."""
    expected = {_key(p, o) for p, offsets in processed.items() for o in offsets}
    consumer = Consumer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "group.id": f"bench-txnacks-verify-{uuid.uuid4().hex[:8]}",  # required, never joined
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "logger": toolkit.quiet_logger("bench.txn_acks.rdkafka"),
        }
    )
    seen: set[bytes] = set()
    twice = 0
    unexpected = 0
    wrong_size = 0
    at_end: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        consumer.assign([CkTopicPartition(topic, p, 0) for p in range(ctx.partitions)])
        while not (len(at_end) == ctx.partitions and len(seen) + twice >= len(expected)):
            if time.monotonic() > deadline:
                break
            for m in consumer.consume(1000, 0.5):
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:  # noqa: SLF001 - librdkafka's name
                        at_end.add(m.partition())
                        continue
                    raise toolkit.CheckFailed(f"{label}: read_committed consumer error {err}")
                at_end.discard(m.partition())
                key = m.key()
                if key in seen:
                    twice += 1
                elif key not in expected:
                    unexpected += 1
                seen.add(key)
                if len(m.value()) != size:
                    wrong_size += 1
    finally:
        consumer.close()
    missing = len(expected - seen)
    if missing or twice or unexpected or wrong_size:
        raise toolkit.CheckFailed(
            f"{label}: read_committed read of {topic}: {missing} of {len(expected)} outputs "
            f"missing, {twice} seen twice, {unexpected} unexpected, {wrong_size} of wrong size"
        )


def check_start_offsets(
    ctx: RunContext, label: str, group: str, processed: dict[int, list[int]]
) -> None:
    """The share-partition start offsets moved past exactly the records processed."""
    from producer import Admin  # noqa: PLC0415

    want = []
    for p in range(ctx.partitions):
        offsets = sorted(processed.get(p, []))
        if offsets != list(range(len(offsets))):
            raise toolkit.CheckFailed(f"{label}: partition {p}: processed offsets are not 0..n-1")
        want.append((p, len(offsets)))
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + 10
    with Admin(ctx.bootstrap) as admin:
        while time.monotonic() < deadline:
            progress = admin.share_group_progress(group, [ctx.input_topic])
            # -1: a share partition this group never wrote (nothing acknowledged there)
            got = sorted((tp.partition, max(o, 0)) for tp, o in progress.items())
            if got == want:
                return
            time.sleep(0.05)  # commit markers are written after EndTxn answers
    raise toolkit.CheckFailed(f"{label}: share-partition start offsets {got}, expected {want}")


# -- fsync of the broker's data directory -------------------------------------------------------


def measure_fsync(case: Case, args: argparse.Namespace, ctx: RunContext, tick: Tick) -> Sample:
    """Append a few bytes to a file in the broker's data directory and time os.fsync, about
    every millisecond for ``--fsync-seconds`` (long enough for the CPU-noise guard's ticks)."""
    del case
    path = ctx.data_dir / f"bench-fsync-probe-{uuid.uuid4().hex[:8]}"
    data = os.urandom(FSYNC_WRITE_BYTES)
    times: list[float] = []
    clock = time.perf_counter
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)  # the file exists on disk before the timed fsyncs
        cpu0 = toolkit.CpuSnapshot.take(ctx.pid)
        start = clock()
        end = start + args.fsync_seconds
        while True:
            os.write(fd, data)
            t0 = clock()
            os.fsync(fd)
            t1 = clock()
            times.append(t1 - t0)
            if t1 >= end:
                break
            if not len(times) % 64:
                tick(int((t1 - start) * 1000))
            # A pause, as between the broker's appends: back-to-back fsyncs would keep the
            # kernel's journal thread busy, which the CPU-noise guard counts as other work.
            time.sleep(FSYNC_PAUSE_S)
        elapsed = clock() - start
        cpu1 = toolkit.CpuSnapshot.take(ctx.pid)
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
    tick(int(elapsed * 1000))
    other = (cpu1.machine - cpu0.machine) - (cpu1.ours - cpu0.ours)
    return Sample(
        records=len(times),
        units=len(times),
        seconds=elapsed,
        ack_s=[],
        commit_s=times,
        polls=0,
        split_polls=0,
        broker_cpu_s=cpu1.broker - cpu0.broker,
        client_cpu_s=cpu1.client - cpu0.client,
        other_cpu_s=max(other, 0.0),
    )


# -- rounds -------------------------------------------------------------------------------------


def _describe(case: Case, sample: Sample) -> str:
    if case.kind == "fsync":
        return (
            f"fsync p50 {toolkit.pct(sample.commit_s, 50) * 1000:6.2f} ms, "
            f"p99 {toolkit.pct(sample.commit_s, 99) * 1000:6.2f} ms ({sample.units} samples)"
        )
    step = "commit" if case.kind == "txn" else "flush"
    return (
        f"{sample.rate:>9,.0f} rec/s ({sample.records:,} in {sample.seconds:.2f} s, "
        f"{sample.units:,} units; {step} p50 {toolkit.pct(sample.commit_s, 50) * 1000:.2f} ms)"
    )


def run_rounds(cases: list[Case], args: argparse.Namespace, ctx: RunContext) -> None:
    def measure(case: Case, tick: Tick) -> Sample:
        if case.kind == "fsync":
            return measure_fsync(case, args, ctx, tick)
        return run_ctp(case, args, ctx, tick)

    def progress_of(case: Case) -> Callable[[int], tuple[float, str]]:
        if case.kind == "fsync":
            return toolkit.count_progress(int(args.fsync_seconds * 1000), "ms")
        return toolkit.count_progress(case.records, "records")

    toolkit.run_rounds(
        cases,
        rounds=args.rounds,
        retries=args.retries,
        console=console,
        measure=measure,
        describe=_describe,
        progress_of=progress_of,
    )


# -- report -------------------------------------------------------------------------------------


def throughput_table(cases: list[Case], args: argparse.Namespace) -> Table:
    table = toolkit.rate_table(
        f"Consume-transform-produce of {args.record_size} B records, "
        f"{args.partitions} input and {args.partitions} output partition(s) "
        "(median over rounds)",
        "records",
        before=("records\nper run",),
        after=("units/s",),
    )
    for case in cases:
        if not case.samples or case.kind == "fsync":
            continue
        table.add_row(
            f"({case.key}) {case.label}",
            f"{case.records:,}",
            *toolkit.rate_cells(case.samples, lambda s: s.rate * args.record_size),
            f"{statistics.median(s.units / s.seconds for s in case.kept()):,.1f}",
            *toolkit.cpu_cells(case.samples),
        )
    return table


def ratios(cases: list[Case]) -> list[tuple[int, str, float, float, float]]:
    """(K, name, ratio of the medians, lowest and highest ratio within one round)."""
    by_key = {c.key: c for c in cases}
    out: list[tuple[int, str, float, float, float]] = []
    for case in cases:
        if case.kind != "txn":
            continue
        top, bottom = case, by_key.get(f"ack{case.txn_size}")
        if not (bottom and top.samples and bottom.samples):
            continue
        name = (
            f"(txn{case.txn_size}) transactional / (ack{case.txn_size}) explicit, "
            f"{case.txn_size:,} per unit"
        )
        out.append((case.txn_size, name, *toolkit.paired_ratio(top.samples, bottom.samples)))
    return out


def ratio_table(rows: list[tuple[int, str, float, float, float]]) -> Table:
    return toolkit.ratio_table([row[1:] for row in rows])


def latency_summary(case: Case) -> dict[str, float]:
    kept = case.kept()
    ack = [x for s in kept for x in s.ack_s]
    commit = [x for s in kept for x in s.commit_s]
    out = {
        "samples": len(commit),
        "commit_p50_ms": toolkit.pct(commit, 50) * 1000,
        "commit_p99_ms": toolkit.pct(commit, 99) * 1000,
    }
    if ack:  # not for fsync
        out["ack_p50_ms"] = toolkit.pct(ack, 50) * 1000
        out["ack_p99_ms"] = toolkit.pct(ack, 99) * 1000
    return out


def latency_table(cases: list[Case]) -> Table:
    table = Table(title="Per-unit latency, ms (all units of the rounds kept)")
    table.add_column("case", no_wrap=True)
    table.add_column("timed call", no_wrap=True)
    table.add_column("p50", justify="right")
    table.add_column("p99", justify="right")
    table.add_column("acks call", no_wrap=True)
    table.add_column("p50", justify="right")
    table.add_column("p99", justify="right")
    table.add_column("samples", justify="right")
    for case in cases:
        if not case.samples:
            continue
        s = latency_summary(case)
        if case.kind == "fsync":
            row = (f"{FSYNC_WRITE_BYTES} B append + os.fsync", "-", "", "")
        elif case.kind == "txn":
            row = ("commit_transaction", "send_share_acks_to_txn", "", "")
        else:
            row = ("flush", "commit_sync", "", "")
        has_ack = case.kind != "fsync"
        table.add_row(
            f"({case.key}) {case.label}",
            row[0],
            f"{s['commit_p50_ms']:.2f}",
            f"{s['commit_p99_ms']:.2f}",
            row[1],
            f"{s['ack_p50_ms']:.2f}" if has_ack else "-",
            f"{s['ack_p99_ms']:.2f}" if has_ack else "-",
            f"{s['samples']:,}",
        )
    return table


# -- main ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=(
            "Transactional share acknowledgements (KIP-1289) on the sharetxn broker: "
            "consume-transform-produce throughput with one transaction per K records "
            "(send_share_acks_to_transaction + commit_transaction), as a ratio of the same "
            "loop with explicit acknowledgements (ACCEPT + commit_sync) and an idempotent "
            "producer flushed per K, measured in the same run; commit_transaction latency "
            "p50/p99 next to the fsync latency of the broker's data directory. Everything on "
            "127.0.0.1, with the project's client library (producer)."
        ),
        epilog="example: python bench/txn_acks.py --rounds 1 --records 5000 --records-k1 200",
    )
    parser.add_argument(
        "--txn-sizes",
        default="1,100,1000",
        help="records per transaction (and per commit_sync), comma-separated (1,100,1000)",
    )
    toolkit.add_number_options(
        parser,
        [
            ("--records", 15_000, "records per measurement for K > 1, rounded up to whole units"),
            ("--records-k1", 500, "records per measurement for K = 1"),
            ("--record-size", 1024, "value bytes"),
            ("--partitions", 1, "input and output topic partitions"),
        ],
    )
    parser.add_argument(
        "--input-batch",
        type=int,
        default=100,
        help="records per log batch of the input topic (batch.num.messages, 100)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=0,
        help="batch.size of both producers (default: the client's, 16384 bytes)",
    )
    parser.add_argument(
        "--fsync-seconds",
        type=float,
        default=1.0,
        help="time fsyncs of the broker's data directory for this long per round (1.0)",
    )
    toolkit.add_broker_arguments(parser)
    toolkit.add_round_arguments(parser, rounds=5)
    return parser


def build_cases(args: argparse.Namespace, sizes: list[int]) -> list[Case]:
    cases: list[Case] = []
    for k in sizes:
        records = _round_up(args.records_k1 if k == 1 else args.records, k, args.input_batch)
        poll = _round_up(MIN_POLL_RECORDS, k, args.input_batch)
        cases.append(
            Case(
                f"txn{k}",
                f"transactional, {k:,}/txn",
                f"ShareConsumer share.acknowledgement.mode=transactional, TransactionalProducer "
                f"with transactional.id; per {k:,} records: begin_transaction, {k:,} x send, "
                "send_share_acks_to_transaction, commit_transaction; "
                f"max.poll.records={poll}",
                "txn",
                txn_size=k,
                records=records,
                max_poll_records=poll,
            )
        )
        cases.append(
            Case(
                f"ack{k}",
                f"explicit, commit_sync/{k:,}",
                f"ShareConsumer share.acknowledgement.mode=explicit, idempotent "
                f"TransactionalProducer without transactional.id; per {k:,} records: "
                f"{k:,} x send, flush, acknowledge(ACCEPT) x {k:,}, commit_sync; "
                f"max.poll.records={poll}",
                "explicit",
                txn_size=k,
                records=records,
                max_poll_records=poll,
            )
        )
    cases.append(
        Case(
            "fsync",
            "fsync of the data dir",
            f"os.fsync after a {FSYNC_WRITE_BYTES} B append to a file in the broker's data "
            "directory",
            "fsync",
        )
    )
    return cases


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    sizes = sorted({int(x) for x in args.txn_sizes.split(",") if x.strip()})
    if (
        not sizes
        or min(sizes) < 1
        or min(args.records, args.records_k1, args.rounds, args.partitions, args.input_batch) < 1
        or args.fsync_seconds <= 0
    ):
        console.print(
            "[red]need --txn-sizes, --records, --records-k1, --rounds, --partitions, "
            "--input-batch >= 1 and --fsync-seconds > 0[/]"
        )
        return 2
    toolkit.install_sigterm()
    broker_config = toolkit.broker_config(args)
    value = os.urandom(args.record_size)
    run = toolkit.announce(console, "txn_acks.py", argv)
    cases = build_cases(args, sizes)
    needed = max(c.records for c in cases if c.kind != "fsync")
    # Whole polls: the last poll of the longest case must find as many records as it asks for.
    needed = _round_up(needed + max(c.max_poll_records for c in cases), args.input_batch)
    run_started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        broker, pid = toolkit.start_broker(stack, console, broker_config)
        bootstrap = broker.bootstrap_servers
        console.print(
            f"writing {needed * args.partitions:,} x {args.record_size} B records "
            f"in batches of {args.input_batch} ..."
        )
        topic = delivery.produce_topic(
            bootstrap,
            f"bench-txnacks-in-{uuid.uuid4().hex[:8]}",
            args.partitions,
            needed * args.partitions,
            value,
            **{"batch.num.messages": args.input_batch, "linger.ms": 100},
        )
        warmup_topic = f"bench-txnacks-warmup-{uuid.uuid4().hex[:8]}"
        toolkit.create_topics(bootstrap, [warmup_topic], 1)
        ctx = RunContext(bootstrap, pid, broker.data_dir, topic.name, args.partitions, warmup_topic)
        run_rounds(cases, args, ctx)
    run_seconds = time.perf_counter() - run_started
    for case in cases:
        console.print(f"({case.key}) {case.detail}")
    console.print(throughput_table(cases, args))
    console.print(
        "[dim]clock: from the first poll that returned records to the last commit; MB/s: 10^6 "
        "bytes of input values per second; units/s: transactions or commit_syncs per second; "
        "cores: CPU seconds per wall-clock second of the broker and of this client process "
        "(consumer, producer and their threads); us/rec: broker CPU per record[/]"
    )
    rows = ratios(cases)
    console.print(ratio_table(rows))
    console.print(latency_table(cases))
    fsync_case = next(c for c in cases if c.kind == "fsync")
    fsync = latency_summary(fsync_case)
    for case in cases:
        if case.kind == "txn" and case.samples:
            s = latency_summary(case)
            console.print(
                f"({case.key}) commit_transaction p50 {s['commit_p50_ms']:.2f} ms, p99 "
                f"{s['commit_p99_ms']:.2f} ms = {s['commit_p50_ms'] / fsync['commit_p50_ms']:.1f}x"
                f" / {s['commit_p99_ms'] / fsync['commit_p99_ms']:.1f}x the data directory's "
                f"fsync p50 {fsync['commit_p50_ms']:.2f} ms, p99 {fsync['commit_p99_ms']:.2f} ms"
            )
    goal = next((r for r in rows if r[0] == GOAL_TXN_SIZE), None)
    if goal is not None:
        met = goal[2] >= GOAL_RATIO
        console.print(
            f"goal: at {GOAL_TXN_SIZE:,} records per transaction at least {GOAL_RATIO} of the "
            f"non-transactional throughput: {goal[2]:.2f}x, "
            + ("[green]met[/]" if met else "[red]not met[/]")
        )
    split = sum(s.split_polls for c in cases for s in c.samples)
    if split:
        console.print(
            f"[yellow]warning: {split} polls came while a unit was half read (polls not aligned "
            "with K); in explicit mode their acknowledgements rode on a ShareFetch[/]"
        )
    toolkit.warn_if_disturbed(console, cases)
    console.print(
        "[dim]checks passed: the input topic holds exactly the records produced; every record "
        "had delivery count 1; every transaction and commit_sync succeeded; a read_committed "
        "confluent-kafka Consumer saw every output exactly once and nothing else; the share "
        "groups' start offsets moved past exactly the records processed[/]"
    )
    run.finish(
        args,
        console,
        run_seconds,
        {
            "cases": [_case_json(c) for c in cases],
            "ratios": [{"txn_size": row[0], **toolkit.ratios_json([row[1:]])[0]} for row in rows],
            "goal": {"txn_size": GOAL_TXN_SIZE, "min_ratio": GOAL_RATIO},
        },
    )
    return 0


def _case_json(case: Case) -> dict[str, Any]:
    data = toolkit.case_json(
        case,
        txn_size=case.txn_size,
        records=case.records,
        max_poll_records=case.max_poll_records,
    )
    if case.samples:
        data["latency"] = latency_summary(case)
        if case.kind != "fsync":
            data["median_records_per_s"] = case.median()
    return data


if __name__ == "__main__":
    toolkit.main_guard(main, console)
