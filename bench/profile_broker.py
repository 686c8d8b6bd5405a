"""Profile the sharetxn broker under the produce load of ``bench/produce.py``.

Two profilers:

* ``cprofile`` (default, nothing to install): the broker runs in a child process
  as ``coordinator.launcher.serve`` under ``cProfile``; on SIGTERM it writes its
  stats, and the top functions by own time and by cumulative time are printed.
  cProfile slows Python code down (roughly 1.5-2x), so read its figures as shares.
* ``py-spy`` (``pip install py-spy``): a ``LocalBroker`` is sampled from outside
  at 200 Hz with ``py-spy record --format raw``; prints functions by own samples
  (the leaf frame) and by inclusive samples.  Idle time of the event loop shows as
  ``select`` (``--idle`` keeps idle samples).

The load is the idempotent producer of ``bench/produce.py`` (or ``--txn``:
transactions of ``--txn-size`` records) for ``--seconds`` seconds, on 127.0.0.1.  With
``--share N``: N records are written first (unprofiled load of the same producer), then read
again and again by the (commit) ``ShareConsumer`` of ``bench/share.py`` (a new share group each
time) for ``--seconds`` seconds.

    python bench/profile_broker.py                       # cProfile, fsync on every append
    python bench/profile_broker.py --txn                 # transactional load
    python bench/profile_broker.py --profiler py-spy --set log.flush.interval.messages=10000
    python bench/profile_broker.py --share 100000        # share consumption
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import io
import os
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import produce  # bench/produce.py, next to this file
import toolkit  # bench/toolkit.py: the shared measurement plumbing

from coordinator.launcher import broker_command

READY = "sharetxn broker ready on "


def _serve_profiled(data_dir: str, out: str, assignments: list[str]) -> None:
    """Child process: the broker in-process under cProfile until SIGTERM."""
    from coordinator.launcher import serve  # noqa: PLC0415
    from txn.config import BrokerConfig  # noqa: PLC0415

    config = BrokerConfig(BrokerConfig.parse_assignments(assignments))
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        asyncio.run(serve(Path(data_dir), toolkit.HOST, 0, config))
    finally:
        profiler.disable()
        profiler.dump_stats(out)


def _start_child(cmd: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=os.getcwd()
    )
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith(READY):
            bootstrap = line[len(READY) :].strip()
            # Keep draining the pipe so the broker never blocks on a full log pipe.
            threading.Thread(target=_drain, args=(proc.stdout,), daemon=True).start()
            return proc, bootstrap
    proc.wait()
    raise RuntimeError("broker did not start:\n" + "".join(lines[-20:]))


def _drain(stream: io.TextIOBase | Any) -> None:
    for _line in stream:
        pass


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _load(args: argparse.Namespace, bootstrap: str, pid: int) -> produce.Sample:
    if args.share:
        return _share_load(args, bootstrap, pid)
    sc = produce.Scenario(
        "p", "profiled", "", bootstrap, pid, transactional=args.txn, exact_watermarks=True
    )
    bench_args = argparse.Namespace(
        records=10**9,
        seconds=args.seconds,
        warmup=2000,
        partitions=args.partitions,
        txn_size=args.txn_size,
        linger_ms=args.linger_ms,
    )
    topic = f"profile-{uuid.uuid4().hex[:6]}"
    toolkit.create_topics(bootstrap, [topic], args.partitions)
    measure = produce.measure_transactional if args.txn else produce.measure_idempotent
    return measure(sc, bench_args, topic, os.urandom(args.record_size), lambda _done: None)


def _share_load(args: argparse.Namespace, bootstrap: str, pid: int) -> produce.Sample:
    """(commit) ShareConsumer reads of an ``args.share``-record topic for ``args.seconds``."""
    import delivery  # noqa: PLC0415 - bench/delivery.py
    import share  # noqa: PLC0415 - bench/share.py

    topic = delivery.produce_topic(
        bootstrap,
        f"profile-{uuid.uuid4().hex[:6]}",
        args.partitions,
        args.share,
        os.urandom(args.record_size),
    )
    ctx = share.RunContext(bootstrap, pid, topic)
    case = share.Case("commit", "profiled", "", "commit")
    bench_args = argparse.Namespace(timeout=120.0)
    records, reads = 0, 0
    cpu0 = toolkit.CpuSnapshot.take(pid)
    start = time.perf_counter()
    while time.perf_counter() - start < args.seconds or not reads:
        group = toolkit.new_share_group(bootstrap, "profile-share")
        try:
            read = share.read_share(case, bench_args, ctx, group, lambda _done: None)
        finally:
            toolkit.delete_group(bootstrap, group)
        records += read.records
        reads += 1
    seconds = time.perf_counter() - start
    usage = cpu0.usage(toolkit.CpuSnapshot.take(pid))
    print(f"share load: {reads} reads of {topic.records:,} records")
    return produce.Sample(records, seconds, usage.broker, usage.client, usage.other)


def _report(sample: produce.Sample) -> None:
    """The load's rate, and a warning when other processes disturbed it (``bench/toolkit``)."""
    print(f"load: {sample.records:,} records in {sample.seconds:.1f} s = {sample.rate:,.0f} msg/s")
    if sample.disturbed:
        print(
            f"disturbed: other processes used {sample.other_cores:.2f} cores meanwhile "
            f"(more than {toolkit.OTHER_CORES_WARN}): the profile's shares may be skewed"
        )


def run_cprofile(args: argparse.Namespace, data_dir: str) -> None:
    out = Path(data_dir) / "broker.pstats"
    cmd = [sys.executable, __file__, "--serve-profiled", data_dir, str(out)]
    for assignment in args.set:
        cmd += ["--set", assignment]
    proc, bootstrap = _start_child(cmd)
    toolkit.BROKER_PIDS.add(proc.pid)  # its CPU is the load's, not other processes'
    try:
        sample = _load(args, bootstrap, proc.pid)
    finally:
        _stop(proc)
    _report(sample)
    if not out.exists():
        print("no profile written (broker did not stop cleanly)")
        return
    for key in ("tottime", "cumulative"):
        buf = io.StringIO()
        stats = pstats.Stats(str(out), stream=buf).strip_dirs().sort_stats(key)
        stats.print_stats(args.top)
        print(f"--- by {key} ---")
        text = buf.getvalue()
        print(text[text.find("   ncalls") :])
    if args.save:
        shutil.copy(out, args.save)
        print(f"pstats saved to {args.save}")


def run_pyspy(args: argparse.Namespace, data_dir: str) -> None:
    spy = shutil.which("py-spy")
    if spy is None:
        print("py-spy is not installed: pip install py-spy")
        return
    cmd = broker_command(data_dir, f"{toolkit.HOST}:0", args.set)
    proc, bootstrap = _start_child(cmd)
    toolkit.BROKER_PIDS.add(proc.pid)  # its CPU is the load's, not other processes'
    raw = Path(data_dir) / "pyspy.txt"
    try:
        record = [spy, "record", "--pid", str(proc.pid), "--rate", "200", "--format", "raw"]
        record += ["--output", str(raw), "--nonblocking"]
        if args.idle:
            record.append("--idle")
        spy_proc = subprocess.Popen(record, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.5)
        try:
            sample = _load(args, bootstrap, proc.pid)
        finally:
            spy_proc.send_signal(signal.SIGINT)
            spy_proc.wait(30)
    finally:
        _stop(proc)
    _report(sample)
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_short(f) for f in stack.split(";")]
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    print(f"{total} samples")
    for title, counter in (("own", own), ("inclusive", inclusive)):
        print(f"--- by {title} samples ---")
        for frame, count in counter.most_common(args.top):
            print(f"{100 * count / max(total, 1):6.1f}%  {frame}")
    if args.save:
        shutil.copy(raw, args.save)
        print(f"raw py-spy stacks saved to {args.save}")


def _short(frame: str) -> str:
    """'func (/long/path/pkg/file.py:12)' -> 'func (pkg/file.py:12)'."""
    name, _, where = frame.partition(" (")
    parts = where.rstrip(")").split("/")
    return f"{name} ({'/'.join(parts[-2:])})" if where else name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiler", choices=["cprofile", "py-spy"], default="cprofile")
    parser.add_argument("--seconds", type=float, default=10.0, help="load duration (10)")
    parser.add_argument("--txn", action="store_true", help="transactional load")
    parser.add_argument(
        "--share", type=int, default=0, metavar="N", help="share load: read N records (off)"
    )
    parser.add_argument("--txn-size", type=int, default=100, help="records per transaction")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--record-size", type=int, default=1024)
    parser.add_argument("--linger-ms", type=int, default=5, help="producer linger.ms (5)")
    parser.add_argument("--top", type=int, default=25, help="functions to list (25)")
    parser.add_argument("--idle", action="store_true", help="py-spy: keep idle samples")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="broker config"
    )
    parser.add_argument("--save", type=Path, help="copy the raw profile to this file")
    parser.add_argument("--serve-profiled", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_profiled:
        _serve_profiled(args.serve_profiled[0], args.serve_profiled[1], args.set)
        return 0
    data_dir = tempfile.mkdtemp(prefix="sharetxn-profile-")
    try:
        if args.profiler == "cprofile":
            run_cprofile(args, data_dir)
        else:
            run_pyspy(args, data_dir)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    toolkit.main_guard(main, produce.console)
