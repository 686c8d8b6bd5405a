"""What every benchmark in bench/ measures with: one place for the plumbing.

* **CPU accounting and disturbance**: the broker's and this client's CPU per wall-clock second,
  and the CPU every *other* process of the machine used meanwhile (``CpuSnapshot``).  On a
  2-core machine other work disturbs the figures: a measurement during which others used more
  than ``OTHER_CORES_WARN`` cores is ``disturbed`` and taken again.
* **Interleaved rounds** (``run_rounds``): every case once per round, the order rotated each
  round, a rich progress bar, retries of disturbed attempts; the least disturbed attempt stands.
* **Ratios** measured in the same run (``paired_ratio``: the ratio of the medians, and the
  lowest and highest ratio within one round), and their table.
* **Simple cases** (``Series``): a case that is one callable returning a rate or a duration,
  timed with the CPU of this process and every process it started (``timed``), measured in
  interleaved rounds by ``measure_series``; its table (``series_table``) and JSON
  (``series_json``).
* **Percentiles**, short number formats, the run's environment, the command line announced
  (``announce``) and the JSON results file.
* **Broker helpers**: topics created and deleted, share groups made and deleted, quiet
  librdkafka loggers.

The scripts import it as ``toolkit`` (bench/ is the script directory on ``sys.path``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import logging
import math
import os
import platform
import resource
import signal
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from confluent_kafka import KafkaException, Producer
from confluent_kafka import libversion as rdkafka_version
from confluent_kafka import version as ck_version
from confluent_kafka.admin import AdminClient, NewTopic
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

if TYPE_CHECKING:
    from coordinator.launcher import LocalBroker

HOST = "127.0.0.1"  # the benchmarks never talk to anything else
MB = 1_000_000
OTHER_CORES_WARN = 0.2  # more CPU than this used by others during a measurement: disturbed


def make_console(width: int) -> Console:
    """A console wide enough for the tables when the output goes to a file or a pipe."""
    return Console(width=None if sys.stdout.isatty() else width)


class CheckFailed(RuntimeError):
    """A correctness check of a benchmark failed: the run stops."""


# -- CPU accounting -----------------------------------------------------------------------------


def cpu_seconds(pid: int | None) -> float:
    """User+system CPU seconds of a process (Linux /proc); 0.0 where unavailable."""
    if pid is None:
        return 0.0
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


def client_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def family_cpu_seconds() -> float:
    """CPU seconds of this process and of every process it started, waited for or running."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    ours = {os.getpid()}
    grew = True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in ours and pid not in ours}
        ours |= found
        grew = bool(found)
    return total + sum(cpu_seconds(pid) for pid in ours - {os.getpid()})


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent busy (user, nice, system, irq, softirq)."""
    try:
        first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in first[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


BROKER_PIDS: set[int] = set()  # every broker process of this run: not "other" CPU


@dataclass(frozen=True)
class CpuUsage:
    """CPU seconds over one measurement."""

    broker: float
    client: float
    other: float


@dataclass(frozen=True)
class CpuSnapshot:
    broker: float
    client: float
    ours: float
    machine: float

    @classmethod
    def take(cls, pid: int | None) -> CpuSnapshot:
        client = client_cpu_seconds()
        ours = client + sum(cpu_seconds(p) for p in BROKER_PIDS)
        return cls(cpu_seconds(pid), client, ours, machine_busy_seconds())

    def usage(self, end: CpuSnapshot) -> CpuUsage:
        other = (end.machine - self.machine) - (end.ours - self.ours)
        return CpuUsage(end.broker - self.broker, end.client - self.client, max(other, 0.0))


class Disturbable:
    """Mixin of a sample with ``seconds`` and ``other_cpu_s``: was it disturbed?"""

    seconds: float
    other_cpu_s: float

    @property
    def other_cores(self) -> float:
        return self.other_cpu_s / self.seconds if self.seconds > 0 else 0.0

    @property
    def disturbed(self) -> bool:
        return self.other_cores > OTHER_CORES_WARN


class Counted(Disturbable):
    """Mixin of a sample of ``records`` in ``seconds``: its rate."""

    records: int

    @property
    def rate(self) -> float:
        return self.records / self.seconds


class Sample(Protocol):
    @property
    def other_cores(self) -> float: ...
    @property
    def disturbed(self) -> bool: ...


class RatedSample(Sample, Protocol):
    @property
    def rate(self) -> float: ...


S = TypeVar("S", bound=Sample)
R = TypeVar("R", bound=RatedSample)


def kept(samples: Sequence[S]) -> list[S]:
    """The undisturbed samples, or all of them if every one was disturbed."""
    return [s for s in samples if not s.disturbed] or list(samples)


def median_rate(samples: Sequence[R]) -> float:
    return statistics.median(s.rate for s in kept(samples))


class SampledCase:
    """Mixin of a case holding its ``samples``: the ones kept, and their median rate."""

    samples: list[Any]

    def kept(self) -> list[Any]:
        return kept(self.samples)

    def median(self) -> float:
        return median_rate(self.samples)


# -- rounds -------------------------------------------------------------------------------------


class Case(Protocol[S]):
    key: str
    label: str
    samples: list[S]


def run_rounds(
    cases: Sequence[Case[S]],
    *,
    rounds: int,
    retries: int,
    console: Console,
    measure: Callable[[Case[S], Callable[[int], None]], S],
    describe: Callable[[Case[S], S], str],
    progress_of: Callable[[Case[S]], Callable[[int], tuple[float, str]]],
    key_width: int = 8,
) -> None:
    """Measure every case ``rounds`` times, interleaved (the order rotates each round).

    ``measure(case, tick)`` takes one sample and calls ``tick(n)`` as it goes;
    ``progress_of(case)`` (called for each attempt) maps ``n`` to the fraction done and the
    text shown.  A disturbed attempt is taken again up to ``retries`` times; the least
    disturbed attempt of a round is appended to ``case.samples``.
    """
    total = len(cases) * rounds
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=console,
        refresh_per_second=4,
    ) as progress:
        overall = progress.add_task("all measurements", total=total, info=f"0/{total}")
        current: TaskID = progress.add_task("", total=1000, info="")
        done = 0
        for rnd in range(rounds):
            shift = rnd % len(cases)
            for case in [*cases[shift:], *cases[:shift]]:
                progress.reset(
                    current,
                    total=1000,
                    description=f"round {rnd + 1}/{rounds}: ({case.key}) {case.label}",
                    info="",
                )
                name = f"round {rnd + 1} ({case.key:>{key_width}}) "
                attempts: list[S] = []
                for attempt in range(retries + 1):
                    of = progress_of(case)

                    def tick(
                        n: int, of: Callable[[int], tuple[float, str]] = of, task: TaskID = current
                    ) -> None:
                        fraction, info = of(n)
                        progress.update(task, completed=min(fraction, 1.0) * 1000, info=info)

                    sample = measure(case, tick)
                    attempts.append(sample)
                    note = ""
                    if sample.disturbed:
                        note = f"  [yellow]disturbed: others used {sample.other_cores:.2f} cores[/]"
                        if attempt < retries:
                            note += "[yellow]; again[/]"
                    progress.console.print(f"{name}{describe(case, sample)}{note}")
                    if not sample.disturbed:
                        break
                case.samples.append(min(attempts, key=lambda s: s.other_cores))
                done += 1
                progress.update(overall, completed=done, info=f"{done}/{total}")


def count_progress(goal: int, unit: str) -> Callable[[int], tuple[float, str]]:
    """Progress as ``n`` of ``goal`` ``unit``s."""
    return lambda n: (n / goal if goal else 1.0, f"{n:,} {unit}")


def add_round_arguments(parser: argparse.ArgumentParser, *, rounds: int, retries: int = 2) -> None:
    """``--rounds``, ``--retries`` and ``--json``: every benchmark takes them."""
    parser.add_argument("--rounds", type=int, default=rounds, help=f"interleaved rounds ({rounds})")
    parser.add_argument(
        "--retries",
        type=int,
        default=retries,
        help=(
            "measure again, up to this many times, when other processes used more than "
            f"{OTHER_CORES_WARN} cores meanwhile ({retries})"
        ),
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON to this file")


# -- simple cases: one callable each ------------------------------------------------------------


@dataclass(frozen=True)
class Timed(Disturbable):
    """One run of a case: what it returned (a rate or a duration), its wall-clock seconds, and
    the CPU seconds every process outside this one and its children used meanwhile."""

    value: float
    seconds: float
    other_cpu_s: float

    @property
    def rate(self) -> float:
        return self.value


def timed(run: Callable[[], float]) -> Timed:
    """Run ``run`` once, timing it and sampling the machine's CPU around it."""
    ours, machine = family_cpu_seconds(), machine_busy_seconds()
    begin = time.perf_counter()
    value = run()
    seconds = time.perf_counter() - begin
    others = (machine_busy_seconds() - machine) - (family_cpu_seconds() - ours)
    return Timed(value, seconds, max(others, 0.0))


@dataclass
class Series(SampledCase):
    """A case that is one callable: ``run()`` returns the figure of one measurement."""

    key: str
    label: str
    run: Callable[[], float]
    samples: list[Timed] = field(default_factory=list)


def measure_series(
    series: Sequence[Series], *, rounds: int, retries: int, console: Console, unit: str
) -> dict[str, float]:
    """Measure each case ``rounds`` times, interleaved; the medians by key."""
    runs = {s.key: s.run for s in series}
    run_rounds(
        series,
        rounds=rounds,
        retries=retries,
        console=console,
        measure=lambda case, _tick: timed(runs[case.key]),
        describe=lambda case, sample: f"{case.label:28} {figure(sample.value):>12} {unit}",
        progress_of=lambda _case: lambda _n: (0.0, ""),
        key_width=max(len(s.key) for s in series),
    )
    return {s.key: s.median() for s in series}


def series_ratio(name: str, top: Series, bottom: Series) -> Ratio:
    """``top`` over ``bottom``, measured in the same rounds (``paired_ratio``)."""
    return (name, *paired_ratio(top.samples, bottom.samples))


def series_table(title: str, unit: str, series: Sequence[Series]) -> Table:
    """Median, range, the most CPU others used, and the rounds kept, one row per case."""
    table = Table(title=title)
    table.add_column("case", no_wrap=True)
    table.add_column(unit, justify="right")
    table.add_column("min..max", justify="right", no_wrap=True)
    table.add_column("other\ncores", justify="right")
    table.add_column("rounds\nkept", justify="right", no_wrap=True)
    for case in series:
        chosen = kept(case.samples)
        values = [s.value for s in chosen]
        table.add_row(
            case.label,
            figure(case.median()),
            f"{figure(min(values))}..{figure(max(values))}",
            f"{max(s.other_cores for s in chosen):.2f}",
            f"{len(chosen)}/{len(case.samples)}",
        )
    return table


def series_json(series: Sequence[Series]) -> dict[str, Any]:
    return {
        s.key: {"label": s.label, "median": s.median(), "samples": [asdict(x) for x in s.samples]}
        for s in series
    }


def add_number_options(
    parser: argparse.ArgumentParser, options: Sequence[tuple[str, int | float, str]]
) -> None:
    """(option, default, help) each: an option taking a number of its default's type, the
    default shown in parentheses after the help."""
    for option, default, text in options:
        parser.add_argument(option, type=type(default), default=default, help=f"{text} ({default})")


def add_int_options(parser: argparse.ArgumentParser, **defaults: int) -> None:
    """``--name`` options taking a whole number, one per keyword (``record_size``:
    ``--record-size``), with the keyword's value as default."""
    for name, default in defaults.items():
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=default)


def add_broker_arguments(parser: argparse.ArgumentParser) -> None:
    """``--set KEY=VALUE`` (broker config, repeatable) and ``--timeout`` (per measurement)."""
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="broker config (repeatable), e.g. --set log.flush.interval.messages=10000",
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="give up on one measurement after (120 s)"
    )


def broker_config(args: argparse.Namespace) -> dict[str, str]:
    """The ``--set`` assignments as a config dict."""
    return dict(item.split("=", 1) for item in args.set)


# -- ratios and figures -------------------------------------------------------------------------

Ratio = tuple[str, float, float, float]  # (name, ratio of the medians, lowest, highest per round)


def paired_ratio(
    top: Sequence[S], bottom: Sequence[S], value: Callable[[S], float] | None = None
) -> tuple[float, float, float]:
    """The ratio of the medians, and the lowest and highest ratio within one round.

    ``value`` is what is compared (a sample's ``rate`` unless given); the medians are over
    the undisturbed samples, the per-round ratios over the rounds where neither was disturbed.
    """
    get: Callable[[S], float] = value or (lambda s: float(s.rate))  # type: ignore[attr-defined]
    pairs = list(zip(top, bottom, strict=False))
    clean = [(a, b) for a, b in pairs if not (a.disturbed or b.disturbed)] or pairs
    paired = [get(a) / get(b) for a, b in clean]
    medians = [statistics.median(get(s) for s in kept(side)) for side in (top, bottom)]
    return medians[0] / medians[1], min(paired), max(paired)


def ratio_table(rows: Sequence[Ratio]) -> Table:
    table = Table(title="Ratios (same run)")
    table.add_column("ratio")
    table.add_column("medians", justify="right")
    table.add_column("per round", justify="right")
    for name, value, low, high in rows:
        table.add_row(name, f"{value:.2f}x", f"{low:.2f}..{high:.2f}")
    return table


def ratios_json(rows: Sequence[Ratio]) -> list[dict[str, Any]]:
    return [
        {"ratio": name, "of_medians": value, "round_min": low, "round_max": high}
        for name, value, low, high in rows
    ]


def rate_table(
    title: str, unit: str, *, before: Sequence[str] = (), after: Sequence[str] = ()
) -> Table:
    """A throughput table: case, ``before``, rate, MB/s, range, ``after``, then the CPU columns.

    Rows come from ``rate_cells`` and ``cpu_cells`` (with the cells of ``before`` and
    ``after`` in between).
    """
    table = Table(title=title)
    table.add_column("case", no_wrap=True)
    for name in before:
        table.add_column(name, justify="right")
    table.add_column(f"{unit}/s", justify="right")
    table.add_column("MB/s", justify="right")
    table.add_column(f"{unit}/s\nmin..max", justify="right", no_wrap=True)
    for name in after:
        table.add_column(name, justify="right")
    table.add_column("broker\ncores", justify="right")
    table.add_column("client\ncores", justify="right")
    table.add_column(f"broker\nus/{unit[:3]}", justify="right")
    table.add_column("other\ncores", justify="right")
    table.add_column("rounds\nkept", justify="right", no_wrap=True)
    return table


def rate_cells(samples: Sequence[Any], value_bytes_per_s: Callable[[Any], float]) -> list[str]:
    """Median rate, median MB/s and the range of rates, over the samples kept."""
    chosen = kept(samples)
    rates = [s.rate for s in chosen]
    return [
        f"{median_rate(samples):,.0f}",
        f"{statistics.median(value_bytes_per_s(s) / MB for s in chosen):,.1f}",
        f"{short(min(rates))}..{short(max(rates))}",
    ]


def cpu_cells(samples: Sequence[Any]) -> list[str]:
    """Broker and client cores, broker CPU per record, the most others used, rounds kept."""
    chosen = kept(samples)
    return [
        f"{statistics.median(s.broker_cpu_s / s.seconds for s in chosen):.2f}",
        f"{statistics.median(s.client_cpu_s / s.seconds for s in chosen):.2f}",
        f"{statistics.median(s.broker_cpu_s / s.records * 1e6 for s in chosen):.1f}",
        f"{max(s.other_cores for s in chosen):.2f}",
        f"{len(chosen)}/{len(samples)}",
    ]


def pct(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (NaN for no values)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(math.ceil(p / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def figure(value: float) -> str:
    """A rate or a duration: whole numbers from 100 up, three decimals below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3f}"


def short(value: float) -> str:
    """A rate in few characters: 12.3k, 950."""
    return f"{value / 1000:.1f}k" if value >= 10_000 else f"{value:.0f}"


# -- the run ------------------------------------------------------------------------------------


def install_sigterm() -> None:
    """SIGTERM ends the run like Ctrl-C (context managers stop the brokers)."""

    def handler(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def confluent_kafka_version() -> str:
    v = ck_version()
    return str(v[0] if isinstance(v, tuple) else v)


def environment() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "confluent_kafka": confluent_kafka_version(),
        "librdkafka": rdkafka_version()[0],
    }


class RunInfo(NamedTuple):
    """A run's command line and start time: what its results file records."""

    command: str
    started: datetime.datetime

    def save(self, args: argparse.Namespace, console: Console, results: dict[str, Any]) -> None:
        """Write the results file when ``--json`` was given."""
        if args.json is not None:
            write_json(
                args.json,
                console,
                args=args,
                command=self.command,
                started=self.started,
                results=results,
            )

    def save_with_ratios(
        self,
        args: argparse.Namespace,
        console: Console,
        results: dict[str, Any],
        ratios: Sequence[Ratio],
    ) -> None:
        """Print the table of ``ratios``; write the results file with them last."""
        console.print(ratio_table(ratios))
        results["ratios"] = ratios_json(ratios)
        self.save(args, console, results)

    def finish(
        self,
        args: argparse.Namespace,
        console: Console,
        run_seconds: float,
        results: dict[str, Any],
    ) -> None:
        """Print how long the run took; write the results file with ``run_seconds`` first."""
        console.print(f"run took {run_seconds:.0f} s")
        self.save(args, console, {"run_seconds": run_seconds, **results})


def begin(
    parser: argparse.ArgumentParser,
    console: Console,
    script: str,
    argv: Sequence[str] | None,
    *,
    rounds: int,
) -> tuple[argparse.Namespace, RunInfo]:
    """The usual start of a benchmark: the round arguments added, the command line parsed,
    SIGTERM handled like Ctrl-C, and the run announced."""
    add_round_arguments(parser, rounds=rounds)
    args = parser.parse_args(argv)
    install_sigterm()
    return args, announce(console, script, argv)


def announce(console: Console, script: str, argv: Sequence[str] | None) -> RunInfo:
    """Print the command line and the environment; the command and the start time."""
    command = f"python bench/{script} " + " ".join(sys.argv[1:] if argv is None else argv)
    started = datetime.datetime.now(datetime.UTC)
    console.print(f"[bold]{command.strip()}[/]")
    console.print(
        f"{started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, {platform.platform()}, "
        f"Python {platform.python_version()}, confluent-kafka {confluent_kafka_version()} "
        f"(librdkafka {rdkafka_version()[0]})"
    )
    return RunInfo(command, started)


def write_json(
    path: Path,
    console: Console,
    *,
    args: argparse.Namespace,
    command: str,
    started: datetime.datetime,
    results: dict[str, Any],
) -> None:
    """The run's results file: the command, the environment, the arguments and ``results``."""
    data = {
        "command": command.strip(),
        "started": started.isoformat(),
        **environment(),
        "args": {k: str(v) for k, v in vars(args).items()},
        **results,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    console.print(f"results written to {path}")


def warn_if_disturbed(console: Console, cases: Sequence[SampledCase]) -> None:
    """A warning when others used more than ``OTHER_CORES_WARN`` cores in a kept sample."""
    disturbed = max((s.other_cores for c in cases for s in c.kept()), default=0)
    if disturbed > OTHER_CORES_WARN:
        console.print(
            f"[yellow]warning: other processes used up to {disturbed:.2f} cores during a "
            "measurement: the figures are disturbed; rerun on a quiet machine[/]"
        )


def case_json(case: Any, **fields: Any) -> dict[str, Any]:
    """A case in the results file: its key, label and detail, ``fields``, then its samples."""
    return {
        "key": case.key,
        "label": case.label,
        "detail": case.detail,
        **fields,
        "samples": [asdict(s) for s in case.samples],
    }


def main_guard(main: Callable[[], int], console: Console) -> None:
    """Run ``main`` as a script: a failed check exits 1, Ctrl-C 130."""
    try:
        sys.exit(main())
    except CheckFailed as exc:
        console.print(f"[red]check failed:[/] {exc}")
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


# -- brokers ------------------------------------------------------------------------------------


def start_broker(
    stack: contextlib.ExitStack, console: Console, config: dict[str, str]
) -> tuple[LocalBroker, int | None]:
    """The run's sharetxn broker on ``HOST`` until ``stack`` closes, and its pid (counted in
    ``BROKER_PIDS``)."""
    from coordinator.launcher import LocalBroker  # noqa: PLC0415 - keeps --help fast

    console.print("starting the broker on 127.0.0.1 ...")
    broker = stack.enter_context(LocalBroker(host=HOST, config=config))
    pid = broker.process.pid if broker.process else None
    if pid is not None:
        BROKER_PIDS.add(pid)
    return broker, pid


def quiet_logger(name: str = "bench.rdkafka") -> logging.Logger:
    """A logger for librdkafka that drops its chatter (connection closes at shutdown)."""
    logger = logging.getLogger(name)
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


def create_topics(bootstrap: str, topics: list[str], partitions: int) -> None:
    """Create ``topics`` (existing ones are fine) and wait until every partition has a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": quiet_logger()})
    deadline = time.monotonic() + 30
    pending = list(topics)
    while pending:
        futures = admin.create_topics(
            [NewTopic(t, partitions, 1) for t in pending], operation_timeout=10
        )
        retry = []
        for topic, fut in futures.items():
            try:
                fut.result()
            except KafkaException as exc:
                if "already exists" in str(exc).lower() or "TOPIC_ALREADY_EXISTS" in str(exc):
                    continue
                if time.monotonic() > deadline:
                    raise
                retry.append(topic)
        pending = retry
        if pending:
            time.sleep(0.2)
    while True:
        md = admin.list_topics(timeout=10)
        ready = all(
            t in md.topics
            and len(md.topics[t].partitions) == partitions
            and all(p.leader >= 0 for p in md.topics[t].partitions.values())
            for t in topics
        )
        if ready:
            return
        if time.monotonic() > deadline:
            raise CheckFailed(f"topics {topics} not ready on {bootstrap} after 30 s")
        time.sleep(0.2)


def fill_topic(
    bootstrap: str, prefix: str, partitions: int, records: int, size: int, *, batch: int = 10_000
) -> str:
    """A new topic of ``records`` keyed records of ``size`` bytes (idempotent producer,
    at most ``batch`` records a batch); its name."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, [name], partitions)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "enable.idempotence": True,
            "batch.num.messages": batch,
            "logger": quiet_logger(),
        }
    )
    value = b"x" * size
    for i in range(records):
        producer.produce(name, value, key=str(i).encode())
        if i % 1000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0:
        raise CheckFailed(f"{name}: records left unsent after 120 s")
    return name


def delete_topic(bootstrap: str, topic: str) -> None:
    """Best effort: the topics of a run would otherwise fill the disk."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": quiet_logger()})
    for fut in admin.delete_topics([topic], operation_timeout=30).values():
        with contextlib.suppress(KafkaException):
            fut.result()


def new_share_group(bootstrap: str, prefix: str) -> str:
    """A new share group that reads from the earliest offset."""
    from producer import Admin  # noqa: PLC0415 - keeps --help fast

    group = f"{prefix}-{uuid.uuid4().hex[:8]}"
    with Admin(bootstrap) as admin:
        admin.alter_group_configs(group, {"share.auto.offset.reset": "earliest"})
    return group


def delete_group(bootstrap: str, group: str) -> None:
    """Best effort: keeps the broker's group state small over the run."""
    from producer import Admin  # noqa: PLC0415

    with contextlib.suppress(Exception), Admin(bootstrap) as admin:
        admin.delete_groups([group])
