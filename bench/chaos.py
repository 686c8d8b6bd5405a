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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

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


def _print_speed(
    args: argparse.Namespace, rounds: dict[str, list[Speed]], figures: dict[str, Any]
) -> None:
    print(f"\nspeed, {args.seeds} seeds x {args.ops} operations, median of {args.rounds} rounds:")
    medians: dict[str, float] = {}
    for case, speeds in rounds.items():
        if not speeds:
            continue
        ops_s = _median([s.ops_per_s for s in speeds])
        virt = _median([s.virtual_per_s for s in speeds])
        medians[case] = ops_s
        figures[case] = {"ops_per_cpu_s": round(ops_s), "virtual_s_per_cpu_s": round(virt)}
        print(f"  {case:10} {ops_s:8,.0f} simulated ops/s   {virt:6,.0f} simulated s per s")
    on = medians["faults on"]
    print(f"  faults on / faults off: {on / medians['faults off']:.2f}")
    if "baseline" in medians:
        figures["baseline_rev"] = args.baseline_rev
        print(f"  this tree / {args.baseline_rev}: {on / medians['baseline']:.2f}")
    verdict = "meets" if on >= GOAL_OPS_PER_S else "misses"
    print(f"  goal {GOAL_OPS_PER_S:,} ops/s per core: {verdict} it")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=10, help="seeds per speed case (10)")
    parser.add_argument("--ops", type=int, default=2000, help="operations per seed (2000)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (3)")
    parser.add_argument("--baseline-rev", default=None, help="also measure this commit")
    parser.add_argument("--trials", type=int, default=3, help="detection trials per mutation")
    parser.add_argument("--max-seeds", type=int, default=1000, help="give up after this many")
    parser.add_argument("--only", default="", help="comma-separated mutations (default all)")
    parser.add_argument("--no-mutations", action="store_true", help="measure speed only")
    parser.add_argument("--no-speed", action="store_true", help="measure detection only")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args()

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
    rounds: dict[str, list[Speed]] = {"faults on": [], "faults off": [], "baseline": []}
    try:
        with quiet_logs():
            for r in range(0 if args.no_speed else args.rounds):
                cases = ["faults on", "faults off"] + (["baseline"] if worktree else [])
                for case in cases[r % len(cases) :] + cases[: r % len(cases)]:
                    if case == "baseline":
                        assert worktree is not None
                        speed = measure_at(worktree, args.seeds, args.ops)
                    else:
                        speed = measure(args.seeds, args.ops, faults=case == "faults on")
                    rounds[case].append(speed)
                    print(
                        f"round {r + 1} {case:10} {speed.ops_per_s:8,.0f} ops/s"
                        f" {speed.virtual_per_s:6,.0f} simulated s/s",
                        flush=True,
                    )
    finally:
        if worktree is not None:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False
            )
    figures: dict[str, Any] = {"seeds": args.seeds, "ops": args.ops, "rounds": args.rounds}
    if not args.no_speed:
        _print_speed(args, rounds, figures)
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
    if args.json is not None:
        figures["speed_rounds"] = {k: [asdict(s) for s in v] for k, v in rounds.items()}
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
