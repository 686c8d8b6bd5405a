"""The chaos harness (deterministic simulation): speed on one core, how fast mutations are caught.

Measured in one process (pin it to one core: ``taskset -c 1 python bench/chaos.py``):

* **speed** -- seeds ``1..--seeds`` of ``--ops`` client operations each, with the swarm's faults
  on, and the same seeds with every fault off (the baseline of this run); per case the simulated
  client operations per CPU second and the simulated (virtual) seconds per CPU second, CPU being
  this process's ``time.process_time()`` around each whole run (simulation and checker).
  With ``--baseline-rev REV`` the faults-on case is also run on the tree of that commit (a
  ``git worktree`` in a temporary directory, in a child process with the same pinning), and
  the ratio of this tree to it is printed.  Cases are interleaved over
  ``--rounds`` rounds; figures are medians over rounds.
* **mutations** -- for each seeded protocol bug (``chaos.mutations``), the seeds run until the
  first violation, starting from ``--trials`` different seeds (1, 1001, 2001, ...); printed:
  the median and the largest seeds-to-detection, and the invariants that caught it.

The goal (docs/performance.md): at least 5,000 simulated operations per second on one core, and
every mutation caught with a median of at most 100 seeds.

Example::

    taskset -c 1 python bench/chaos.py                         # about 2 minutes
    taskset -c 1 python bench/chaos.py --baseline-rev HEAD~3 --rounds 5 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import toolkit  # bench/toolkit.py, next to this file: the shared measurement plumbing

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
console = toolkit.make_console(110)

GOAL_OPS_PER_S = 5000
GOAL_MEDIAN_SEEDS = 100
TRIAL_STRIDE = 1000


@dataclass
class Speed:
    ops: int
    virtual_s: float
    cpu_s: float

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.cpu_s

    @property
    def virtual_per_s(self) -> float:
        return self.virtual_s / self.cpu_s


def measure(seeds: int, ops: int, *, faults: bool) -> Speed:
    """Run seeds 1..seeds in this process; CPU time around each whole run."""
    from chaos.runner import Simulation  # noqa: PLC0415

    total = Speed(0, 0.0, 0.0)
    for seed in range(1, seeds + 1):
        started = time.process_time()
        # (a run defers the cyclic collector to its end, still inside this window)
        result = Simulation(seed, ops, faults=faults).run()
        total.cpu_s += time.process_time() - started
        total.ops += result.stats.ops
        total.virtual_s += result.stats.virtual_ms / 1000
    return total


def measure_at(tree: Path, seeds: int, ops: int) -> Speed:
    """The faults-on measurement on another source tree, in a child process."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]);"
        "import chaos_bench;"
        "s = chaos_bench.measure(int(sys.argv[3]), int(sys.argv[4]), faults=True);"
        "print(json.dumps([s.ops, s.virtual_s, s.cpu_s]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as shim:
        # This file under an importable name, next to the other tree (which goes first).
        (Path(shim) / "chaos_bench.py").write_text(Path(__file__).read_text())
        (Path(shim) / "toolkit.py").write_text((HERE / "toolkit.py").read_text())
        done = subprocess.run(
            [sys.executable, "-c", code, str(tree), shim, str(seeds), str(ops)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=tree,
        )
    ops_, virtual, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    return Speed(int(ops_), float(virtual), float(cpu))


def seeds_to_detection(
    name: str, ops: int, trials: int, max_seeds: int
) -> tuple[list[int | None], list[str]]:
    from chaos.runner import RunOptions, run_options  # noqa: PLC0415

    found: list[int | None] = []
    invariants: set[str] = set()
    for trial in range(trials):
        first = 1 + trial * TRIAL_STRIDE
        caught: int | None = None
        for n, seed in enumerate(range(first, first + max_seeds), start=1):
            result = run_options(seed, ops, RunOptions((), name))
            if not result.ok:
                caught = n
                invariants.update(v.invariant for v in result.violations)
                break
        found.append(caught)
    return found, sorted(invariants)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def measure_speed(args: argparse.Namespace, worktree: Path | None, figures: dict[str, Any]) -> None:
    """The speed cases in interleaved rounds: simulated operations per CPU second."""
    runs: dict[str, list[Speed]] = {}

    def case(key: str, label: str, take: Callable[[], Speed]) -> toolkit.Series:
        def run() -> float:
            speed = take()
            runs.setdefault(key, []).append(speed)
            return speed.ops_per_s

        return toolkit.Series(key, label, run)

    series = [
        case("on", "faults on", lambda: measure(args.seeds, args.ops, faults=True)),
        case("off", "faults off", lambda: measure(args.seeds, args.ops, faults=False)),
    ]
    if worktree is not None:
        tree = worktree
        series.append(
            case(
                "baseline",
                f"faults on, {args.baseline_rev}",
                lambda: measure_at(tree, args.seeds, args.ops),
            )
        )
    toolkit.measure_series(
        series, rounds=args.rounds, retries=args.retries, console=console, unit="ops/CPU s"
    )
    console.print(
        toolkit.series_table(
            f"speed, {args.seeds} seeds x {args.ops} operations", "simulated ops/CPU s", series
        )
    )
    for one in series:
        virtual = _median([s.virtual_per_s for s in runs[one.key]])
        figures[one.label] = {
            "ops_per_cpu_s": round(one.median()),
            "virtual_s_per_cpu_s": round(virtual),
        }
        console.print(f"  {one.label}: {virtual:,.0f} simulated s per CPU s")
    ratios = [toolkit.series_ratio("faults on / faults off", series[0], series[1])]
    if worktree is not None:
        figures["baseline_rev"] = args.baseline_rev
        ratios.append(
            toolkit.series_ratio(f"this tree / {args.baseline_rev}", series[0], series[2])
        )
    console.print(toolkit.ratio_table(ratios))
    figures["ratios"] = toolkit.ratios_json(ratios)
    figures["speed_rounds"] = {k: [asdict(s) for s in v] for k, v in runs.items()}
    on = series[0].median()
    verdict = "meets" if on >= GOAL_OPS_PER_S else "misses"
    console.print(f"  goal {GOAL_OPS_PER_S:,} ops/s per core: {verdict} it")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=10, help="seeds per speed case (10)")
    parser.add_argument("--ops", type=int, default=2000, help="operations per seed (2000)")
    parser.add_argument("--baseline-rev", default=None, help="also measure this commit")
    parser.add_argument("--trials", type=int, default=3, help="detection trials per mutation")
    parser.add_argument("--max-seeds", type=int, default=1000, help="give up after this many")
    parser.add_argument("--only", default="", help="comma-separated mutations (default all)")
    parser.add_argument("--no-mutations", action="store_true", help="measure speed only")
    parser.add_argument("--no-speed", action="store_true", help="measure detection only")
    toolkit.add_round_arguments(parser, rounds=3)
    args = parser.parse_args(argv)
    run = toolkit.announce(console, "chaos.py", argv)

    from chaos.mutations import MUTATIONS  # noqa: PLC0415
    from chaos.run_env import quiet_logs  # noqa: PLC0415

    worktree: Path | None = None
    if args.baseline_rev:
        worktree = Path(tempfile.mkdtemp(prefix="chaos-bench-")) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(worktree), args.baseline_rev],
            cwd=ROOT,
            check=True,
        )
    figures: dict[str, Any] = {"seeds": args.seeds, "ops": args.ops, "rounds": args.rounds}
    try:
        with quiet_logs():
            if not args.no_speed:
                measure_speed(args, worktree, figures)
    finally:
        if worktree is not None:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False
            )
    if not args.no_mutations:
        names = [n for n in args.only.split(",") if n] or list(MUTATIONS)
        print(f"\nseeds to detection ({args.trials} trials from seeds 1, 1001, ...):")
        table: dict[str, Any] = {}
        medians_seen: list[float] = []
        with quiet_logs():
            for name in names:
                found, invariants = seeds_to_detection(name, args.ops, args.trials, args.max_seeds)
                caught = [n for n in found if n is not None]
                median = _median([float(n) for n in caught]) if caught else float("inf")
                medians_seen.append(median)
                table[name] = {"trials": found, "median": median, "invariants": invariants}
                shown = ", ".join("-" if n is None else str(n) for n in found)
                print(
                    f"  {name:30} median {median:>5g}  max {max(caught, default=0):>4}"
                    f"  [{shown}]  by {', '.join(invariants)}",
                    flush=True,
                )
        figures["mutations"] = table
        overall = _median(medians_seen)
        print(
            f"  median over mutations {overall:g}; all caught within {args.max_seeds} seeds:"
            f" {all(None not in t['trials'] for t in table.values())}"
            f" (goal: median <= {GOAL_MEDIAN_SEEDS})"
        )
    run.save(args, console, figures)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    toolkit.main_guard(main, console)
