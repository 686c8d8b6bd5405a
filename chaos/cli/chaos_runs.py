"""``sharetxn chaos``: deterministic simulation runs, replays and mutation runs.

    sharetxn chaos run --seeds 200 --ops 2000 [--first-seed 1] [--jobs 2] [--json]
    sharetxn chaos replay 17 [--ops 2000] [--history h.jsonl] [--json]
    sharetxn chaos mutants [--ops 2000] [--max-seeds 100] [--json]
    sharetxn chaos bugs
    sharetxn chaos real --duration 60 [--seed S] [--clients 3] [--records 2000] [--keep] [--json]
    sharetxn chaos real --workload sink --duration 60   # KIP-1302 sink workers instead
    sharetxn chaos real --workload recovery --target kafka --duration 120   # the Spark sink's
        # recovery path without Spark, against Apache Kafka (or --target sharetxn)

Every run is reproducible from its seed (and the commit): a failure prints the seed and the
exact replay command.  The exit code is 0 only when no invariant was violated.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chaos.runner import RunOptions, RunResult, SeedSummary

EXAMPLES = """examples:
  sharetxn chaos run --seeds 200 --ops 2000
  sharetxn chaos run --seeds 1000 --first-seed 5000 --jobs 4 --json > runs.json
  sharetxn chaos run --seeds 50 --assume-fixed all        # open product bugs patched out
  sharetxn chaos replay 17 --ops 2000 --history seed17.jsonl
  sharetxn chaos run --seeds 100 --report chaos-report     # DIR/index.html
  sharetxn chaos mutants --max-seeds 100
  sharetxn chaos bugs
  sharetxn chaos real --duration 60 --seed 7        # real processes, kill -9 and SIGSTOP
  sharetxn chaos real --workload recovery --target kafka --kafka-2pc off --seed 3
"""

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_USAGE = 64


def _patch_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--assume-fixed",
        default="",
        metavar="BUGS",
        help="patch out open product bugs (comma-separated ids, or 'all'; see 'chaos bugs')",
    )
    parser.add_argument(
        "--mutation", default=None, help="seed a protocol bug (see 'chaos mutants --list')"
    )
    parser.add_argument(
        "--tv0-hazards",
        action="store_true",
        help="add faults transaction version 0 cannot survive (late markers, stale EndTxn)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EXAMPLES
    sub = parser.add_subparsers(dest="chaos_action", required=True, metavar="ACTION")
    run = sub.add_parser("run", help="simulate many seeds and check every history")
    run.add_argument("--seeds", type=int, default=100, help="how many seeds (default 100)")
    run.add_argument("--ops", type=int, default=2000, help="client operations per seed (2000)")
    run.add_argument("--first-seed", type=int, default=1, help="first seed (default 1)")
    run.add_argument(
        "--jobs", type=int, default=1, help="worker processes (default 1; 0 = one per CPU)"
    )
    run.add_argument("--json", action="store_true", help="print one JSON document")
    run.add_argument(
        "--history-dir", type=Path, default=None, help="write the history of each failing seed"
    )
    _report_option(run)
    _patch_options(run)
    replay = sub.add_parser("replay", help="re-run one seed and explain its violations")
    replay.add_argument("seed", type=int)
    replay.add_argument("--ops", type=int, default=2000, help="client operations (2000)")
    replay.add_argument("--history", type=Path, default=None, help="write the history (JSONL)")
    replay.add_argument("--json", action="store_true", help="print one JSON document")
    _report_option(replay)
    _patch_options(replay)
    mutants = sub.add_parser("mutants", help="run each seeded protocol bug until it is caught")
    mutants.add_argument("--ops", type=int, default=2000, help="client operations per seed")
    mutants.add_argument("--max-seeds", type=int, default=100, help="give up after this many")
    mutants.add_argument("--first-seed", type=int, default=1)
    mutants.add_argument("--only", default="", help="comma-separated mutation names")
    mutants.add_argument("--list", action="store_true", help="list the mutations and exit")
    mutants.add_argument("--json", action="store_true", help="print one JSON document")
    sub.add_parser("bugs", help="list the product bugs found by the simulation")
    _add_real(sub)


REAL_HELP = """Run the real system under faults: a 'sharetxn broker' process on a temporary data
directory, an input topic with --records unique values, and --clients client processes doing
consume-transform-produce with the sharetxn library (share consumer in transactional mode,
transactional producer, share acks in the transaction, some 2PC prepare + complete).  For
--duration seconds a seeded fault loop kills the broker (kill -9, restart on the same data
directory and port), pauses it (SIGSTOP past its timeouts), kills clients (kill -9, a fresh
process takes over), pauses them and makes zombies (a paused client is replaced; when it
resumes it must be fenced).  Then faults stop, a drain lets the clients finish the input,
a stock confluent-kafka read_committed consumer reads the output, and the merged history is
judged by the checker plus direct checks: every input exactly once in the output, nothing
lost, every record acknowledged in the share group, no open transaction.  Exit code 0 only
without a violation.  The seed fixes the fault schedule, not the processes' timing.

--workload recovery runs a Spark-free micro-batch driver instead: the ExactlyOnce sink's
prepared transactions, intents/N, commits/N, commit phase and start-up recovery, against
Apache Kafka (--target kafka, with or without KIP-939) or sharetxn, under kill -9 of the
driver (at its kill points and at random) and of the broker (docs/chaos.md)."""


def _add_real(sub: Any) -> None:
    real = sub.add_parser(
        "real",
        help="real broker and client processes under kill -9 and SIGSTOP",
        description=REAL_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    real.add_argument("--duration", type=float, default=60.0, help="seconds of faults (60)")
    real.add_argument("--seed", type=int, default=None, help="fault schedule seed (printed)")
    real.add_argument("--clients", type=int, default=3, help="client processes (3)")
    real.add_argument(
        "--workload",
        choices=("copy", "sink", "recovery"),
        default="copy",
        help="copy: consume-transform-produce clients (default); sink: 'sharetxn sink run' "
        "exactly-once workers (KIP-1302), --clients of them; recovery: a Spark-free "
        "micro-batch driver running the ExactlyOnce sink's prepare, commit and recovery path",
    )
    recovery = real.add_argument_group("--workload recovery")
    recovery.add_argument(
        "--target",
        choices=("kafka", "sharetxn"),
        default="kafka",
        help="the broker killed and restarted: an Apache Kafka node (its jars from the "
        "reference cache or --kafka-jars) or a 'sharetxn broker' (default kafka)",
    )
    recovery.add_argument(
        "--kafka-2pc",
        choices=("on", "off"),
        default="on",
        help="Kafka's transaction.two.phase.commit.enable (KIP-939); off: prepared "
        "transactions are plain ones, bounded by --transaction-timeout-ms (default on)",
    )
    recovery.add_argument(
        "--prepare-mode",
        choices=("auto", "enable2pc", "timeout", "mixed"),
        default="auto",
        help="the writers' sharetxn.prepare.mode; mixed: even writers enable2pc, odd timeout",
    )
    recovery.add_argument(
        "--transaction-timeout-ms",
        type=int,
        default=60000,
        help="the writers' transaction.timeout.ms (60000)",
    )
    recovery.add_argument(
        "--kafka-jars", type=Path, default=None, help="a Kafka distribution's libs/ directory"
    )
    real.add_argument("--records", type=int, default=2000, help="input records (2000)")
    real.add_argument(
        "--drain-timeout", type=float, default=60.0, help="seconds the drain may take (60)"
    )
    real.add_argument(
        "--keep",
        action="store_true",
        help="keep the run directory: broker data, logs, histories (kept on violations anyway)",
    )
    real.add_argument(
        "--dir", type=Path, default=None, help="run directory (default: a temporary one)"
    )
    real.add_argument("--json", action="store_true", help="print one JSON document")


def _report_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="DIR",
        help="write an HTML report (DIR/index.html: seeds, timelines, anomalies, replay commands)",
    )


def _write_report(
    directory: Path, invocation: str, summaries: list[SeedSummary], results: list[RunResult]
) -> Path:
    from chaos.report import detail_of, write_report  # noqa: PLC0415

    commands = {s.seed: s.command for s in summaries}
    return write_report(
        directory,
        title=" ".join(invocation.split()[:4]),
        invocation=invocation,
        rows=summaries,
        details=[detail_of(r, commands[r.seed]) for r in results],
    )


def _options(args: argparse.Namespace) -> RunOptions:
    from chaos.known_bugs import KNOWN_BUGS  # noqa: PLC0415 - keep `sharetxn --help` fast
    from chaos.runner import RunOptions  # noqa: PLC0415

    text = str(args.assume_fixed or "")
    names = tuple(KNOWN_BUGS) if text == "all" else tuple(n for n in text.split(",") if n)
    options = RunOptions(names, args.mutation, bool(args.tv0_hazards))
    options.patches()  # validates the names
    return options


def run(args: argparse.Namespace) -> int:
    try:
        if args.chaos_action == "run":
            return _run(args)
        if args.chaos_action == "replay":
            return _replay(args)
        if args.chaos_action == "mutants":
            return _mutants(args)
        if args.chaos_action == "real":
            return _real(args)
        return _bugs()
    except ValueError as exc:
        print(f"sharetxn chaos: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console  # noqa: PLC0415
    from rich.progress import (  # noqa: PLC0415
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from chaos.report import MAX_DETAILED  # noqa: PLC0415
    from chaos.runner import run_batch, run_options  # noqa: PLC0415

    if args.seeds <= 0 or args.ops <= 0:
        raise ValueError("--seeds and --ops must be positive")
    options = _options(args)
    jobs = args.jobs if args.jobs > 0 else (os.cpu_count() or 1)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    console = Console(stderr=True)
    if args.history_dir is not None:
        args.history_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    failures: list[SeedSummary] = []
    with Progress(
        TextColumn("[bold]chaos[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
        disable=args.json or not console.is_terminal,
    ) as progress:
        task = progress.add_task("seeds", total=len(seeds), status="")

        def done(summary: SeedSummary) -> None:
            if not summary.ok:
                failures.append(summary)
                if not args.json:
                    progress.console.print(
                        f"[red]seed {summary.seed}[/]: {len(summary.violations)} violation(s) -- "
                        f"{summary.violations[0]['invariant']} {summary.violations[0]['message']}"
                        f"\n  replay: {summary.command}"
                    )
            progress.update(task, advance=1, status=f"{len(failures)} failing")

        summaries = run_batch(
            seeds, args.ops, options, jobs=jobs, history_dir=args.history_dir, on_summary=done
        )
    wall = time.perf_counter() - started
    ops = sum(s.invoked for s in summaries)
    cpu = sum(s.wall_s for s in summaries)
    virtual = sum(s.virtual_ms for s in summaries)
    if args.json:
        print(
            json.dumps(
                {
                    "seeds": [s.to_json() for s in summaries],
                    "failing_seeds": [s.seed for s in failures],
                    "ops": ops,
                    "wall_s": round(wall, 2),
                    "ops_per_cpu_s": round(ops / cpu, 1) if cpu else None,
                    "virtual_s_per_cpu_s": round(virtual / 1000 / cpu, 1) if cpu else None,
                    "options": {
                        "assume_fixed": list(options.assume_fixed),
                        "mutation": options.mutation,
                        "tv0_hazards": options.tv0_hazards,
                    },
                },
                indent=2,
            )
        )
    else:
        out = Console()
        rate = f"{ops / cpu:,.0f} ops/s per core" if cpu else ""
        out.print(
            f"{len(summaries)} seeds, {ops:,} operations in {wall:.1f} s ({rate}); "
            f"{virtual / 1000:,.0f} s simulated"
        )
        if failures:
            out.print(f"[red]{len(failures)} seed(s) violated invariants:[/]")
            for summary in failures:
                out.print(f"  {summary.command}")
        else:
            out.print("[green]no invariant violated[/]")
    if args.report is not None:
        # The failing seeds (or the first one of a clean batch) again, in this process: the
        # same seed gives the same history, and the report needs it whole.
        shown = [s.seed for s in failures[:MAX_DETAILED]] or seeds[:1]
        results = [run_options(seed, args.ops, options) for seed in shown]
        flags = options.flags()
        invocation = (
            f"sharetxn chaos run --seeds {args.seeds} --ops {args.ops}"
            f" --first-seed {args.first_seed}" + (f" {flags}" if flags else "")
        )
        path = _write_report(args.report, invocation, summaries, results)
        console.print(f"report: {path}")
    return EXIT_VIOLATION if failures else EXIT_OK


def _replay(args: argparse.Namespace) -> int:
    from chaos.runner import run_options, summarize  # noqa: PLC0415

    options = _options(args)
    result = run_options(args.seed, args.ops, options)
    summary = summarize(result, options)
    if args.history is not None:
        result.history.write(args.history)
    if args.json:
        print(json.dumps(summary.to_json(), indent=2))
    else:
        s = result.stats
        print(
            f"seed {args.seed}: {s.ops} operations, {len(result.history.entries)} history entries,"
            f" {s.virtual_ms / 1000:.1f} s simulated in {s.wall_s:.2f} s;"
            f" {s.broker_crashes} broker crash(es), {s.client_crashes} client crash(es),"
            f" {s.pauses} pause(s); drain {'quiescent' if s.quiescent else 'NOT quiescent'}"
        )
        print(f"history sha256 {summary.history_digest}")
        if result.ok:
            print("no invariant violated")
        else:
            print(f"{len(result.violations)} violation(s):")
            for text in summary.described:
                print(text)
            print(f"replay: {summary.command}")
    if args.report is not None:
        path = _write_report(args.report, summary.command, [summary], [result])
        print(f"report: {path}", file=sys.stderr)
    return EXIT_OK if result.ok else EXIT_VIOLATION


def _mutants(args: argparse.Namespace) -> int:
    from chaos.known_bugs import KNOWN_BUGS  # noqa: PLC0415
    from chaos.mutations import MUTATIONS  # noqa: PLC0415
    from chaos.runner import RunOptions, run_options  # noqa: PLC0415

    if args.list:
        for name, patch in MUTATIONS.items():
            print(f"{name:32} {patch.description} (expected: {', '.join(patch.invariants)})")
        return EXIT_OK
    names = [n for n in args.only.split(",") if n] or list(MUTATIONS)
    unknown = [n for n in names if n not in MUTATIONS]
    if unknown:
        raise ValueError(f"unknown mutation(s): {', '.join(unknown)}")
    report: list[dict[str, Any]] = []
    missed = 0
    for name in names:
        options = RunOptions(tuple(KNOWN_BUGS), name)
        caught: dict[str, Any] | None = None
        for seed in range(args.first_seed, args.first_seed + args.max_seeds):
            result = run_options(seed, args.ops, options)
            if not result.ok:
                caught = {
                    "seed": seed,
                    "seeds_to_detection": seed - args.first_seed + 1,
                    "invariants": sorted({v.invariant for v in result.violations}),
                    "replay": f"{result.replay_command()} {options.flags()}",
                }
                break
        if caught is None:
            missed += 1
        report.append({"mutation": name, "caught": caught})
        if not args.json:
            if caught is None:
                print(f"{name:32} NOT caught in {args.max_seeds} seeds")
            else:
                print(
                    f"{name:32} caught after {caught['seeds_to_detection']} seed(s)"
                    f" by {', '.join(caught['invariants'])}: {caught['replay']}"
                )
    if args.json:
        print(json.dumps({"mutations": report, "missed": missed}, indent=2))
    return EXIT_VIOLATION if missed else EXIT_OK


def _real(args: argparse.Namespace) -> int:
    from chaos.real_run import choose_seed  # noqa: PLC0415

    # What every real-process workload takes from the command line.
    common: dict[str, Any] = {
        "duration_s": args.duration,
        "seed": choose_seed(args.seed),
        "records": args.records,
        "drain_timeout_s": args.drain_timeout,
        "run_dir": args.dir,
        "keep": args.keep,
    }
    if args.workload == "recovery":
        from chaos.real_recovery import RecoveryChaosOptions  # noqa: PLC0415
        from chaos.real_recovery import main as recovery_main  # noqa: PLC0415

        options = RecoveryChaosOptions(
            target=args.target,
            kafka_2pc=args.kafka_2pc == "on",
            prepare_mode=args.prepare_mode,
            transaction_timeout_ms=args.transaction_timeout_ms,
            kafka_jars=args.kafka_jars,
            **common,
        )
        return recovery_main(options, as_json=args.json)
    if args.workload == "sink":
        from chaos.real_sink import SinkChaosOptions  # noqa: PLC0415
        from chaos.real_sink import main as sink_main  # noqa: PLC0415

        return sink_main(SinkChaosOptions(workers=args.clients, **common), as_json=args.json)
    from chaos.real import RealOptions, main  # noqa: PLC0415

    return main(RealOptions(clients=args.clients, **common), as_json=args.json)


def _bugs() -> int:
    from chaos.known_bugs import FIXED, KNOWN_BUGS  # noqa: PLC0415

    if not KNOWN_BUGS:
        print("open: none")
    for name, patch in KNOWN_BUGS.items():
        print(f"{name} (open): {patch.description} (caught by {', '.join(patch.invariants)})")
    for name, description in FIXED.items():
        print(f"{name} (fixed): {description}")
    print("details: chaos/known_bugs.py, docs/chaos.md")
    return EXIT_OK
