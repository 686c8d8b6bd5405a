"""Client decode speed of compressed record batches: this tree against an earlier commit.

The share consumer decodes every fetched batch in Python (``producer.protocol.records``). This
benchmark builds batches of ``--records`` records of ``--value-bytes`` bytes with each of
Kafka's codecs, then decodes them again and again for ``--seconds`` seconds per case and
prints records decoded per CPU second, for this tree and for ``--baseline-rev`` (default: the
commit before the codecs moved to ``cramjam``, whose snappy and lz4 decoders were written in
Python and which read zstd only when a zstd module was installed). Both run in child
processes on the same batches (built here, so both decode the same bytes); the baseline runs
from a ``git worktree`` with ``cramjam`` hidden, as on a machine without it, which is what
that commit's pure-Python fallbacks were for. Cases are interleaved over ``--rounds``
rounds; figures are medians.

Example::

    python bench/compression.py                  # about 1 minute
    python bench/compression.py --baseline-rev HEAD~5 --baseline-cramjam --json out.json
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import toolkit  # bench/toolkit.py, next to this file: the shared measurement plumbing

ROOT = Path(__file__).resolve().parents[1]
console = toolkit.make_console(100)
BASELINE_REV = "31ba7d3"  # the last commit with the pure-Python snappy/lz4 decoders
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]

# Runs in the child: decode the batches of one codec for N seconds; print records/CPU-second.
CHILD = r"""
import sys, time
if sys.argv[4] == "hide-cramjam":
    sys.modules["cramjam"] = None
from producer.protocol.records import decode_records, RecordDecodeError
data = open(sys.argv[1], "rb").read()
seconds = float(sys.argv[2]); per_batch = int(sys.argv[3])
start = time.process_time(); decoded = 0
try:
    while time.process_time() - start < seconds:
        for _record in decode_records(data):
            decoded += 1
except RecordDecodeError as exc:
    print("unsupported", exc); sys.exit(0)
print(decoded / (time.process_time() - start))
"""


def build(codec: str, records: int, value_bytes: int, batches: int, out: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from txn.batch import build_batch  # noqa: PLC0415
    from txn.compression import codec_by_name  # noqa: PLC0415

    words = [f"field{i % 97}=value{i % 13};".encode() for i in range(value_bytes)]
    value = b"".join(words)[:value_bytes]
    blob = b"".join(
        build_batch(
            [(str(i).encode(), value) for i in range(records)],
            base_offset=n * records,
            timestamp_ms=1,
            compression=codec_by_name(codec),
        )
        for n in range(batches)
    )
    out.write_bytes(blob)


def measure(tree: Path, batch_file: Path, seconds: float, records: int, hide: bool) -> float | None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            str(batch_file),
            str(seconds),
            str(records),
            "hide-cramjam" if hide else "-",
        ],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    text = done.stdout.strip()
    return None if text.startswith("unsupported") else float(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-rev", default=BASELINE_REV)
    parser.add_argument(
        "--baseline-cramjam",
        action="store_true",
        help="let the baseline use cramjam (for a baseline newer than the move to cramjam)",
    )
    parser.add_argument("--records", type=int, default=500, help="records per batch")
    toolkit.add_int_options(parser, batches=20, value_bytes=200)
    parser.add_argument("--seconds", type=float, default=1.5, help="per case and round")
    args, run = toolkit.begin(parser, console, "compression.py", argv, rounds=3)

    tmp = Path(tempfile.mkdtemp(prefix="compression-bench-"))
    worktree = tmp / "baseline"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "-q", str(worktree), args.baseline_rev],
        cwd=ROOT,
        check=True,
    )

    def decoding(codec: str, tree: Path, hide: bool) -> Callable[[], float]:
        def run() -> float:
            rate = measure(tree, files[codec], args.seconds, args.records, hide)
            return math.nan if rate is None else rate  # NaN: that tree cannot decode it

        return run

    files: dict[str, Path] = {}
    cases: dict[str, tuple[toolkit.Series, toolkit.Series]] = {}
    try:
        for codec in CODECS:
            files[codec] = tmp / f"{codec}.bin"
            build(codec, args.records, args.value_bytes, args.batches, files[codec])
            cases[codec] = (
                toolkit.Series(codec, f"{codec}, this tree", decoding(codec, ROOT, False)),
                toolkit.Series(
                    f"{codec}-base",
                    f"{codec}, baseline",
                    decoding(codec, worktree, not args.baseline_cramjam),
                ),
            )
        series = [case for pair in cases.values() for case in pair]
        toolkit.measure_series(
            series, rounds=args.rounds, retries=args.retries, console=console, unit="records/CPU s"
        )
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False
        )

    console.print(
        f"records decoded per CPU second ({args.records} records x {args.value_bytes} B a batch,"
        f" medians of {args.rounds} rounds); baseline = {args.baseline_rev}"
    )
    console.print(toolkit.series_table("decode speed", "records/CPU s", series))
    figures: dict[str, Any] = {}
    ratios: list[toolkit.Ratio] = []
    for codec, (new, old) in cases.items():
        size = files[codec].stat().st_size / files["none"].stat().st_size
        decodable = not (math.isnan(new.median()) or math.isnan(old.median()))
        if decodable:
            ratios.append(toolkit.series_ratio(f"{codec}: this tree / baseline", new, old))
        else:
            console.print(f"{codec}: the baseline could not decode it")
        console.print(f"{codec}: compressed size / raw {size:.2f}")
        figures[codec] = {
            "this_tree": new.median(),
            "baseline": old.median() if decodable else None,
            "size_ratio": size,
        }
    console.print(toolkit.ratio_table(ratios))
    run.save(
        args,
        console,
        {
            "figures": figures,
            "series": toolkit.series_json(series),
            "ratios": toolkit.ratios_json(ratios),
        },
    )
    return 0


if __name__ == "__main__":
    toolkit.main_guard(main, console)
