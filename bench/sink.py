"""Share sink workers (KIP-1302): throughput against a bare share consumer, and head-of-line.

Measured in one run on one sharetxn broker (``LocalBroker``, default flush policy):

* **throughput** -- ``--records`` records of ``--record-size`` bytes on a 3-partition topic
  (written by a stock producer in batches of at most 500 records, so several workers can
  share a partition), consumed once per case, each case with a new share group reading
  from the earliest offset:

  - (base) a stock confluent-kafka ``ShareConsumer`` in this process, ``explicit`` mode,
    every record ACCEPTed and ``commit_sync()`` after each poll, no other work;
  - (ours) the same loop with this project's ``producer.ShareConsumer``, which the worker
    uses: the worker's own overhead is the ratio of a 1-worker case to (ours);
  - (file-alo) ``sharetxn sink run`` with ``producer.sink.FileSink``, at-least-once
    (one line per record, fsync before each acknowledgement), 1 and 3 worker processes;
  - (topic-alo) ``producer.sink.KafkaTopicSink`` at-least-once (outputs produced and
    flushed before acknowledging), 1 and 3 workers;
  - (topic-eos) ``producer.sink.KafkaTopicSink`` exactly-once: one KIP-1289 transaction
    per poll of up to 500 records, 1 and 3 workers.

  The tasks are the built-in ones behind a start gate: every task's ``start`` waits until
  all worker processes are up, so a case is timed from the gate opening (then each task
  subscribes and joins the group) until the group's share-partition start offsets reach
  the end of the topic (everything acknowledged; polled every 50 ms); the base case from
  ``subscribe()`` to its last ``commit_sync()``.  Printed: records/s, the ratio to (base),
  and exactly-once over at-least-once (goal >= 0.8x).

* **head-of-line** -- the KIP's case: one record in a hundred is slow (``--slow-ms``) on a
  one-partition topic of ``--hol-records`` records.  A consumer-group member owns the
  partition and handles the records in order (stock confluent-kafka ``Consumer``); against
  it, three sink worker processes on one share group run the same task
  (``bench/sink.py``'s ``SlowOneInHundred``), so other records go on while one is slow.
  The consumer is timed from its first record (its group join is not counted).

Interleaved over ``--rounds`` rounds (order rotated); figures are medians.

Example::

    python bench/sink.py                         # about 3 minutes on 2 cores
    python bench/sink.py --records 20000 --rounds 1 --json out.json
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import toolkit  # noqa: E402 - bench/toolkit.py, next to this file
from confluent_kafka import AcknowledgeType, Consumer, ShareConsumer  # noqa: E402

from coordinator.launcher import LocalBroker  # noqa: E402
from producer.admin import Admin, TopicSpec  # noqa: E402
from producer.sink import FileSink, KafkaTopicSink, SinkRecord  # noqa: E402
from txn.ids import TopicPartition  # noqa: E402

PARTITIONS = 3
console = toolkit.make_console(100)


def _wait_for_go(config: dict[str, str]) -> None:
    """Tell the bench this task is up (``gate.dir/ready-PID``), then wait for ``gate.dir/go``.

    So that every worker process of a case starts consuming at once, after its start-up.
    """
    gate = Path(config["gate.dir"])
    (gate / f"ready-{os.getpid()}-{threading.get_ident()}").touch()
    while not (gate / "go").exists():
        time.sleep(0.01)


class GatedFileSink(FileSink):
    def start(self, config: dict[str, str]) -> None:
        super().start(config)
        _wait_for_go(config)


class GatedTopicSink(KafkaTopicSink):
    def start(self, config: dict[str, str]) -> None:
        super().start(config)
        _wait_for_go(config)


class SlowOneInHundred(GatedFileSink):
    """FileSink that sleeps ``slow.ms`` on every record whose key is a multiple of 100."""

    def start(self, config: dict[str, str]) -> None:
        self.slow_s = int(config.get("slow.ms", "100")) / 1000
        super().start(config)

    def put(self, records: list[SinkRecord]) -> None:
        for r in records:
            if r.key is not None and int(r.key) % 100 == 0:
                time.sleep(self.slow_s)
        super().put(records)


def make_topic(bootstrap: str, partitions: int, records: int, size: int, batch: int) -> str:
    return toolkit.fill_topic(bootstrap, "sink-bench", partitions, records, size, batch=batch)


def new_group(bootstrap: str) -> str:
    return toolkit.new_share_group(bootstrap, "sink-bench")


def all_acknowledged(bootstrap: str, group: str, topic: str, end: dict[int, int]) -> bool:
    with Admin(bootstrap) as admin:
        try:
            progress = admin.share_group_progress(group, [topic])
        except Exception:
            return False
    return {tp.partition: o for tp, o in progress.items()} == end


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    with Admin(bootstrap) as admin:
        parts = admin.list_topics()[topic]
        return {p: admin.list_offsets(TopicPartition(topic, p), -1) for p in parts}


def _drain(
    consumer: Any, topic: str, records: int, label: str, ack: Callable[[Any], None]
) -> float:
    """Records/s of one share consumer acknowledging every record and committing each poll."""
    seen = 0
    start = time.perf_counter()
    consumer.subscribe([topic])
    try:
        while seen < records:
            batch = consumer.poll(1.0)
            for m in batch:
                ack(m)
            seen += len(batch)
            if batch:
                consumer.commit_sync(30.0)
            if time.perf_counter() - start > 300:
                raise SystemExit(f"{label}: {seen}/{records} after 300 s")
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    return records / elapsed


def base_rate(bootstrap: str, topic: str, records: int) -> float:
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": new_group(bootstrap),
            "share.acknowledgement.mode": "explicit",
            "logger": toolkit.quiet_logger("bench.sink.rdkafka"),
        }
    )
    return _drain(
        consumer, topic, records, "base", lambda m: consumer.acknowledge(m, AcknowledgeType.ACCEPT)
    )


def ours_rate(bootstrap: str, topic: str, records: int) -> float:
    """As ``base_rate`` with this project's ``producer.ShareConsumer`` (what the worker uses)."""
    from producer import ShareConsumer as OurShareConsumer  # noqa: PLC0415

    consumer = OurShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": new_group(bootstrap),
            "share.acknowledgement.mode": "explicit",
        }
    )
    return _drain(consumer, topic, records, "ours", consumer.acknowledge)


def run_workers(
    bootstrap: str,
    topic: str,
    records: int,
    workers: int,
    connector: dict[str, str],
    workdir: Path,
) -> float:
    """Records/s of ``workers`` sink processes, from "go" to everything acknowledged."""
    group = new_group(bootstrap)
    name = f"bench-{uuid.uuid4().hex[:6]}"
    end = end_offsets(bootstrap, topic)
    props = {
        "bootstrap.servers": bootstrap,
        "consumer.group.protocol": "share",
        "name": name,
        "share.group.id": group,
        "topics": topic,
        "tasks.max": "1",
        **connector,
    }
    gate = workdir / f"gate-{name}"
    gate.mkdir()
    props["gate.dir"] = str(gate)
    path = workdir / f"{name}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), str(HERE)])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "chaos.cli", "sink", "run", str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        for _ in range(workers)
    ]
    try:
        waited = time.perf_counter()
        while len(list(gate.glob("ready-*"))) < workers:
            if any(p.poll() is not None for p in procs) or time.perf_counter() - waited > 60:
                raise SystemExit(f"{connector}: a worker did not start")
            time.sleep(0.01)
        start = time.perf_counter()
        (gate / "go").touch()
        while not all_acknowledged(bootstrap, group, topic, end):
            if time.perf_counter() - start > 300:
                raise SystemExit(f"{connector}: not done after 300 s")
            time.sleep(0.05)
        elapsed = time.perf_counter() - start
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(60)
    return records / elapsed


def consumer_group_rate(bootstrap: str, topic: str, records: int, slow_ms: int) -> float:
    """One partition-owning consumer handling records in order, sleeping on the slow ones."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"hol-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    seen = 0
    start = 0.0
    consumer.subscribe([topic])
    try:
        while seen < records:
            batch = [m for m in consumer.consume(500, 1.0) if m.error() is None]
            if batch and not start:
                start = time.perf_counter()  # from the first record: joining is not counted
            for m in batch:
                if int(m.key()) % 100 == 0:
                    time.sleep(slow_ms / 1000)
            seen += len(batch)
            if batch:
                consumer.commit(asynchronous=False)
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    return records / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    toolkit.add_int_options(parser, records=30_000, record_size=200, hol_records=3_000, slow_ms=100)
    args, run = toolkit.begin(parser, console, "sink.py", argv, rounds=2)
    results: dict[str, Any] = {}
    with LocalBroker() as broker, tempfile.TemporaryDirectory() as tmp:
        b = broker.bootstrap_servers
        work = Path(tmp)
        topic = make_topic(b, PARTITIONS, args.records, args.record_size, 500)
        n = args.records
        lock = threading.Lock()
        counter = [0]

        def out_topic() -> str:
            with lock:
                counter[0] += 1
                name = f"{topic}-out{counter[0]}"
            with Admin(b) as admin:
                admin.create_topics([TopicSpec(name, PARTITIONS)])
            return name

        def file_case(workers: int) -> Callable[[], float]:
            def run() -> float:
                out = work / f"file-{uuid.uuid4().hex[:6]}.txt"
                conn = {"connector.class": "sink.GatedFileSink", "file": str(out)}
                return run_workers(b, topic, n, workers, conn, work)

            return run

        def topic_case(workers: int, semantics: str) -> Callable[[], float]:
            def run() -> float:
                conn = {
                    "connector.class": "sink.GatedTopicSink",
                    "target.topic": out_topic(),
                    "share.delivery.semantics": semantics,
                }
                return run_workers(b, topic, n, workers, conn, work)

            return run

        cases = [
            toolkit.Series("base", "base (stock ShareConsumer)", lambda: base_rate(b, topic, n)),
            toolkit.Series("ours", "ours (producer.ShareConsumer)", lambda: ours_rate(b, topic, n)),
        ]
        for w in (1, 3):
            cases.append(toolkit.Series(f"file-alo-{w}", f"FileSink ALO, {w}", file_case(w)))
            at_least, exactly = topic_case(w, "at-least-once"), topic_case(w, "exactly-once")
            cases.append(toolkit.Series(f"topic-alo-{w}", f"KafkaTopicSink ALO, {w}", at_least))
            cases.append(toolkit.Series(f"topic-eos-{w}", f"KafkaTopicSink EOS, {w}", exactly))
        console.print(
            f"throughput: {n:,} records x {args.record_size} B, 3 partitions, {args.rounds} rounds"
        )
        toolkit.measure_series(
            cases, rounds=args.rounds, retries=args.retries, console=console, unit="records/s"
        )
        console.print(toolkit.series_table("throughput", "records/s", cases))
        by_key = {c.key: c for c in cases}
        ratios = [toolkit.series_ratio(f"{c.key} / base", c, by_key["base"]) for c in cases[1:]] + [
            toolkit.series_ratio(f"{c.key} / ours", c, by_key["ours"]) for c in cases[2:]
        ]
        for w in (1, 3):
            eos = by_key[f"topic-eos-{w}"]
            ratios.append(
                toolkit.series_ratio(
                    f"EOS / ALO topic, {w} (goal >= 0.8x)", eos, by_key[f"topic-alo-{w}"]
                )
            )
            ratios.append(
                toolkit.series_ratio(f"EOS / ALO file, {w}", eos, by_key[f"file-alo-{w}"])
            )
        results["throughput"] = toolkit.series_json(cases)

        hol = make_topic(b, 1, args.hol_records, args.record_size, 100)
        slow = {"connector.class": "sink.SlowOneInHundred", "slow.ms": str(args.slow_ms)}

        def share_hol() -> float:
            conn = {**slow, "file": str(work / f"hol-{uuid.uuid4().hex[:6]}.txt")}
            return run_workers(b, hol, args.hol_records, 3, conn, work)

        console.print(
            f"head-of-line: {args.hol_records:,} records on 1 partition, "
            f"1 in 100 slow ({args.slow_ms} ms)"
        )
        hol_cases = [
            toolkit.Series(
                "consumer-group",
                "one partition-owning consumer",
                lambda: consumer_group_rate(b, hol, args.hol_records, args.slow_ms),
            ),
            toolkit.Series("share-3-workers", "3 share-group workers", share_hol),
        ]
        toolkit.measure_series(
            hol_cases, rounds=args.rounds, retries=args.retries, console=console, unit="records/s"
        )
        console.print(toolkit.series_table("head-of-line", "records/s", hol_cases))
        ratios.append(toolkit.series_ratio("head-of-line: share / consumer", *reversed(hol_cases)))
        results["head_of_line"] = toolkit.series_json(hol_cases)
        run.save_with_ratios(args, console, results, ratios)
    return 0


if __name__ == "__main__":
    toolkit.main_guard(main, console)
