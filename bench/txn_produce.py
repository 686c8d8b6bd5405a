"""Transactional produce: sharetxn against Apache Kafka 4.4, and where a transaction's time goes.

The same stock confluent-kafka transactional producer (``transactional.id``, ``linger.ms=5``,
``acks=all``) runs the same loop against each broker: ``begin_transaction``, ``--txn-size``
(100) records of ``--record-size`` (1 KB) bytes on a ``--partitions`` (3) partition topic,
``commit_transaction``, repeated for ``--seconds`` (3) per measurement.  Cases:

* (ours) sharetxn with its default config (``log.flush.interval.messages=1``: fsync on every
  append, the transaction log's records fsynced before they are acted on);
* (base) optional, ``--baseline-tree PATH``: sharetxn from another source tree (an older
  commit, e.g. ``git archive``'d into a directory), the same config: before/after in one run;
* (k) Apache Kafka 4.4.0 (``bench/apache_kafka.py``, Kafka's defaults: no fsync on append),
  warmed up first by ``--kafka-warmup`` (5) seconds of the same loop, untimed.

Every sharetxn broker is warmed up too (``--warmup`` records in transactions per measurement,
and one untimed measurement first).  The measurements are interleaved over ``--rounds`` (5)
rounds, the order rotating each round; each figure is the median over the rounds, and each
ratio is the ratio of the medians with the lowest and highest ratio within one round.  The
checks are ``bench/produce.py``'s: every delivery succeeded, and each log grew by the records
produced plus one to ``--partitions`` commit markers per transaction.

Then, unless ``--no-breakdown``, the per-transaction breakdown on sharetxn: the same loop for
``--breakdown-seconds`` (5) against an instrumented broker (``bench/txn_breakdown.py``): per
transaction, the calls of each step (AddPartitionsToTxn, Produce, EndTxn, the markers, the
CompleteCommit record), the broker's time in them, and the fsyncs each made, with their time;
with ``--baseline-tree``, for the broker from that tree too.

    python bench/txn_produce.py                  # about 2 minutes on 2 cores
    python bench/txn_produce.py --rounds 3 --baseline-tree /tmp/sharetxn-before
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import produce  # bench/produce.py: the transactional loop, its checks and its rounds
import toolkit  # bench/toolkit.py: the shared measurement plumbing
import txn_breakdown  # bench/txn_breakdown.py: the instrumented broker
from rich.table import Table

console = toolkit.make_console(110)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=(
            "Transactional produce with the stock confluent-kafka client: sharetxn against "
            "Apache Kafka 4.4 in the same run, and a per-transaction breakdown on sharetxn."
        ),
        epilog="example: python bench/txn_produce.py --rounds 3",
    )
    toolkit.add_number_options(
        parser,
        [
            ("--seconds", 3.0, "seconds per measurement"),
            ("--records", 10**9, "at most this many records per measurement"),
            ("--warmup", 2000, "records (in transactions) per producer before timing"),
            ("--txn-size", 100, "records per transaction"),
            ("--record-size", 1024, "value bytes"),
            ("--partitions", 3, "topic partitions"),
            ("--linger-ms", 5, "producer linger.ms"),
            ("--kafka-warmup", 5.0, "seconds of the loop against Apache Kafka first, untimed"),
            ("--breakdown-seconds", 5.0, "seconds of the loop against the instrumented broker"),
        ],
    )
    parser.add_argument("--no-kafka", action="store_true", help="skip Apache Kafka (k)")
    parser.add_argument("--no-breakdown", action="store_true", help="skip the breakdown")
    parser.add_argument(
        "--baseline-tree",
        type=Path,
        help="also measure sharetxn from this source tree (a directory holding coordinator/)",
    )
    toolkit.add_broker_arguments(parser)
    return parser


def _sharetxn(
    stack: contextlib.ExitStack, config: dict[str, str], tree: Path | None
) -> tuple[str, int | None]:
    """A sharetxn broker from this tree, or from ``tree`` (its child's cwd and PYTHONPATH)."""
    from coordinator.launcher import LocalBroker  # noqa: PLC0415 - keeps --help fast

    broker = LocalBroker(host=toolkit.HOST, config=config)
    if tree is None:
        stack.enter_context(broker)
    else:
        saved = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = str(tree.resolve())
        try:
            with contextlib.chdir(tree):  # ``python -m coordinator`` imports from the cwd
                stack.enter_context(broker)
        finally:
            if saved is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = saved
    pid = broker.process.pid if broker.process else None
    if pid is not None:
        toolkit.BROKER_PIDS.add(pid)
    return broker.bootstrap_servers, pid


def _scenario(key: str, label: str, detail: str, bootstrap: str, pid: int | None) -> Any:
    return produce.Scenario(key, label, detail, bootstrap, pid, transactional=True)


def measure_once(sc: Any, args: argparse.Namespace, value: bytes, tick: Any) -> Any:
    """One measurement of the transactional loop on a new topic, deleted afterwards."""
    topic = f"bench-{sc.key}-{uuid.uuid4().hex[:8]}"
    toolkit.create_topics(sc.bootstrap, [topic], args.partitions)
    sample = produce.measure_transactional(sc, args, topic, value, tick)
    toolkit.delete_topic(sc.bootstrap, topic)
    return sample


def results_table(scenarios: list[Any], args: argparse.Namespace) -> Table:
    table = toolkit.rate_table(
        f"Transactional produce, {args.txn_size} x {args.record_size} B a transaction, "
        f"{args.partitions} partitions (median over rounds)",
        "msg",
        after=["txn/s"],
    )
    for sc in scenarios:
        chosen = toolkit.kept(sc.samples)
        txn_rate = sorted(s.transactions / s.seconds for s in chosen)[len(chosen) // 2]
        table.add_row(
            f"({sc.key}) {sc.label}",
            *toolkit.rate_cells(sc.samples, lambda s: s.rate * args.record_size),
            f"{txn_rate:,.0f}",
            *toolkit.cpu_cells(sc.samples),
        )
    return table


def ratios(by_key: dict[str, Any]) -> list[toolkit.Ratio]:
    out: list[toolkit.Ratio] = []
    for name, top, bottom in (
        ("(ours) sharetxn / (k) Apache Kafka", "ours", "k"),
        ("(base) sharetxn before / (k) Apache Kafka", "base", "k"),
        ("(ours) sharetxn / (base) sharetxn before", "ours", "base"),
    ):
        if top in by_key and bottom in by_key:
            out.append((name, *toolkit.paired_ratio(by_key[top].samples, by_key[bottom].samples)))
    return out


def breakdown(
    args: argparse.Namespace, value: bytes, tree: Path | None, label: str
) -> dict[str, Any] | None:
    """The loop against an instrumented broker from ``tree`` (this one's if None); the
    per-transaction table, printed."""
    settings = [f"--set={k}={v}" for k, v in toolkit.broker_config(args).items()]
    console.print(f"per-transaction breakdown: instrumented {label} broker ...")
    with txn_breakdown.running(settings, tree) as (
        bootstrap,
        pid,
        finish,
    ):
        toolkit.BROKER_PIDS.add(pid)
        sc = _scenario("bd", "instrumented", "", bootstrap, pid)
        warm = argparse.Namespace(**{**vars(args), "seconds": 1.0})
        measure_once(sc, warm, value, lambda _n: None)
        run = argparse.Namespace(**{**vars(args), "seconds": args.breakdown_seconds})
        topic = f"bench-bd-{uuid.uuid4().hex[:8]}"
        toolkit.create_topics(bootstrap, [topic], args.partitions)
        os.kill(pid, signal.SIGUSR1)  # count from here: the loop's warm-up and timed part
        time.sleep(0.1)
        sample = produce.measure_transactional(sc, run, topic, value, lambda _n: None)
        counts = finish()
    if counts is None:
        console.print("[yellow]the instrumented broker did not write its counts[/]")
        return None
    return _breakdown_table(counts, sample, args, label)


def _breakdown_table(
    counts: txn_breakdown.Counts, sample: Any, args: argparse.Namespace, label: str
) -> dict[str, Any]:
    """Per transaction: the counts cover the loop (its warm-up transactions too), so they are
    divided by every transaction the broker saw meanwhile, its EndTxn calls."""
    txns = max(counts.calls.get("EndTxn", 0), 1)
    table = Table(
        title=(
            f"Per transaction on {label} ({txns:,} transactions of {args.txn_size} records, "
            f"{sample.rate:,.0f} records/s with the instrumentation)"
        )
    )
    for name in ("step", "calls/txn", "broker ms/txn", "fsyncs/txn", "fsync ms/txn"):
        table.add_column(name, justify="left" if name == "step" else "right")
    rows = []
    for step in txn_breakdown.STEPS:
        row = {
            "step": step,
            "calls_per_txn": counts.calls.get(step, 0) / txns,
            "ms_per_txn": counts.seconds.get(step, 0.0) * 1000 / txns,
            "fsyncs_per_txn": counts.fsyncs.get(step, 0) / txns,
            "fsync_ms_per_txn": counts.fsync_seconds.get(step, 0.0) * 1000 / txns,
        }
        rows.append(row)
        table.add_row(
            step,
            f"{row['calls_per_txn']:.2f}" if step != "other" else "",
            f"{row['ms_per_txn']:.3f}" if step != "other" else "",
            f"{row['fsyncs_per_txn']:.2f}",
            f"{row['fsync_ms_per_txn']:.3f}",
        )
    fsyncs = sum(counts.fsyncs.values()) / txns
    table.add_row(
        "all", "", "", f"{fsyncs:.2f}", f"{sum(counts.fsync_seconds.values()) * 1000 / txns:.3f}"
    )
    console.print(table)
    by_log = {k: v / txns for k, v in counts.fsyncs_by_log.items()}
    console.print(
        "fsyncs per transaction by log: "
        + ", ".join(f"{k} {v:.2f}" for k, v in sorted(by_log.items()))
        + f"; wall clock per transaction {sample.seconds * 1000 / max(sample.transactions, 1):.2f}"
        " ms (client side, instrumented broker)"
    )
    sites = sorted(counts.other_sites.items(), key=lambda kv: -kv[1])[:3]
    for site, n in sites:
        console.print(f"  other fsyncs: {n / txns:.2f}/txn from {site}")
    return {
        "transactions": txns,
        "steps": rows,
        "fsyncs_per_txn_by_log": by_log,
        "other_fsync_sites": dict(sites),
    }


def main(argv: list[str] | None = None) -> int:
    args, run = toolkit.begin(build_parser(), console, "txn_produce.py", argv, rounds=5)
    if args.rounds < 1 or args.seconds <= 0:
        console.print("[red]need --rounds >= 1 and --seconds > 0[/]")
        return 2
    value = os.urandom(args.record_size)
    config = {"log.flush.interval.messages": "1", **toolkit.broker_config(args)}
    started = time.perf_counter()
    scenarios: list[Any] = []
    with contextlib.ExitStack() as stack:
        console.print("starting brokers on 127.0.0.1 ...")
        bootstrap, pid = _sharetxn(stack, config, None)
        detail = "sharetxn, default config: fsync on every append"
        scenarios.append(_scenario("ours", "sharetxn", detail, bootstrap, pid))
        if args.baseline_tree is not None:
            bootstrap, pid = _sharetxn(stack, config, args.baseline_tree)
            detail = f"sharetxn from {args.baseline_tree}, the same config"
            scenarios.append(_scenario("base", "sharetxn before", detail, bootstrap, pid))
        if not args.no_kafka:
            import apache_kafka  # noqa: PLC0415 - bench/apache_kafka.py, only when used

            console.print(f"starting Apache Kafka {apache_kafka.KAFKA_VERSION} ...")
            bootstrap, pid = stack.enter_context(apache_kafka.running())
            toolkit.BROKER_PIDS.add(pid)
            detail = f"Apache Kafka {apache_kafka.KAFKA_VERSION}, {apache_kafka.FLUSH_POLICY}"
            scenarios.append(_scenario("k", "Apache Kafka", detail, bootstrap, pid))
        for sc in scenarios:
            seconds = args.kafka_warmup if sc.key == "k" else 1.0
            console.print(f"warming ({sc.key}) up ({seconds:g} s, untimed) ...")
            warm = argparse.Namespace(**{**vars(args), "seconds": seconds})
            measure_once(sc, warm, value, lambda _n: None)
        produce.run_rounds(scenarios, args, value)
    for sc in scenarios:
        console.print(f"({sc.key}) {sc.detail}")
    console.print(results_table(scenarios, args))
    toolkit.warn_if_disturbed(console, scenarios)
    rows = ratios({sc.key: sc for sc in scenarios})
    console.print(toolkit.ratio_table(rows))
    parts: dict[str, Any] = {}
    if not args.no_breakdown:
        parts["ours"] = breakdown(args, value, None, "sharetxn")
        if args.baseline_tree is not None:
            parts["base"] = breakdown(args, value, args.baseline_tree, "sharetxn before")
    results = {
        "scenarios": [
            toolkit.case_json(sc, median_msgs_per_s=sc.median() if sc.samples else None)
            for sc in scenarios
        ],
        "ratios": toolkit.ratios_json(rows),
        "breakdown": parts,
    }
    run.finish(args, console, time.perf_counter() - started, results)
    return 0


if __name__ == "__main__":
    toolkit.main_guard(main, console)
