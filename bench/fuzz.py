"""Fuzz a running broker over TCP: hostile requests of every advertised API and version.

Sixteen connections send, by ``--mode``, byte-level mutations of valid requests (bytes
overwritten, frames cut short, junk appended), structurally hostile requests generated from
the schemas (``tests/structural_frames.py``: boundary values, huge counts, truncations, tag
bombs, crafted record batches), or both, each reconnecting whenever the broker closes it or a
request gets no answer within 250 ms (acks=0, long polls); a well-behaved client asks
ApiVersions and Metadata every 100 ms meanwhile.  At the end: frames sent, frames per second,
how many were answered and how many closed their connection, whether the broker process is
still alive (crashes: 0), how many of the bystander's requests failed (disturbed: 0) or took
over a second (stalls), its slowest answer, and the broker's peak resident memory.

Example::

    python bench/fuzz.py                      # 1,000,000 frames of each kind, several minutes
    python bench/fuzz.py --mode structure --frames 50000 --seed 7 --json out.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import toolkit

from coordinator.launcher import LocalBroker
from tests import structural_frames
from tests.fuzz_rig import Bystander, FrameSource, byte_mutations, fuzz, peak_rss_mib

console = toolkit.make_console(100)


MODES = ("bytes", "structure")


def _sources(mode: str, seed: int) -> Callable[[int], FrameSource]:
    if mode == "bytes":
        return lambda k: byte_mutations(seed * 1000 + k)
    return lambda k: structural_frames.factory(seed * 1000 + k)


def run_mode(mode: str, frames: int, seed: int, connections: int) -> dict[str, Any]:
    """One fresh broker, ``frames`` frames of one kind, the bystander throughout."""
    result: dict[str, Any] = {"mode": mode}
    with LocalBroker() as broker:
        assert broker.process is not None
        pid = broker.process.pid
        bystander = Bystander(broker.bootstrap_servers)
        bystander.start()

        def progress(done: int, seconds: float) -> None:
            print(f"  {mode}: {done:,} frames ({done / max(seconds, 1e-9):,.0f}/s)", flush=True)

        def fuzz_all() -> float:
            source = _sources(mode, seed)
            result.update(fuzz(broker.bootstrap_servers, frames, connections, source, progress))
            return float(result["frames_per_s"])

        timed = toolkit.timed(fuzz_all)
        bystander.stop.set()
        bystander.join(5)
        alive = broker.process.poll() is None
        result.update(
            crashes=0 if alive else 1,
            peak_rss_mib=round(peak_rss_mib(pid), 1),
            bystander_requests=bystander.ok + bystander.failed,
            bystander_failures=bystander.failed,
            bystander_stalls=bystander.stalls,
            bystander_slowest_s=round(bystander.slowest_s, 3),
            other_cores=round(timed.other_cores, 2),
        )
    print(
        f"{mode}: {result['frames']:,} frames in {result['seconds']} s"
        f" ({result['frames_per_s']:,}/s, {result['connections']} connections):"
        f" {result['answered']:,} answered, {result['closed']:,} closed their connection,"
        f" {result['unanswered_within_250ms']:,} unanswered within 250 ms;"
        f" crashes {result['crashes']}; broker peak RSS {result['peak_rss_mib']} MiB;"
        f" bystander {result['bystander_requests']:,} requests,"
        f" {result['bystander_failures']} disturbed, {result['bystander_stalls']} stalls"
        f" (slowest {result['bystander_slowest_s']} s)"
        + (f" (other processes used {timed.other_cores:.2f} cores)" if timed.disturbed else "")
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    toolkit.add_int_options(parser, frames=1_000_000, seed=1, connections=16)
    parser.add_argument("--mode", choices=(*MODES, "both"), default="both")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    toolkit.install_sigterm()
    run = toolkit.announce(console, "fuzz.py", argv)
    modes = MODES if args.mode == "both" else (args.mode,)
    runs = [run_mode(mode, args.frames, args.seed, args.connections) for mode in modes]
    run.save(args, console, {"runs": runs})
    bad = [r for r in runs if r["crashes"] or r["bystander_failures"]]
    return 1 if bad else 0


if __name__ == "__main__":
    toolkit.main_guard(main, console)
