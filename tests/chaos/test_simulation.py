"""Whole simulation runs: determinism, the CI batch, known bugs, and the CLI.

The CI batch is the issue's 200 seeds x 2,000 operations, run in two processes; it applies the
assumed fixes of any open product bug the simulation found (``chaos.known_bugs``; none now).
The short batches run 50 and 100 operations per seed (CI runs short histories too): there the
drain does most of the work, and an input partition may stay empty.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from chaos.known_bugs import KNOWN_BUGS
from chaos.runner import RunOptions, run_batch, run_seed
from tests.sharetxn_cli import run_cli

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parents[2]
CI_SEEDS = 200
CI_OPS = 2000
SHORT_SEEDS = 100
ALL_FIXES = RunOptions(tuple(KNOWN_BUGS))


def test_same_seed_same_history_byte_for_byte() -> None:
    first = run_seed(11, 600).history.to_jsonl()
    second = run_seed(11, 600).history.to_jsonl()
    assert first == second
    assert run_seed(12, 600).history.to_jsonl() != first


def _cli(*args: str, hash_seed: str = "0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    return run_cli("chaos", *args, cwd=ROOT, env=env, timeout=240)


def test_replay_is_identical_across_processes_and_hash_seeds() -> None:
    digests = set()
    for hash_seed in ("0", "1"):
        done = _cli(
            "replay", "5", "--ops", "500", "--json", "--assume-fixed", "all", hash_seed=hash_seed
        )
        assert done.returncode == 0, done.stdout + done.stderr
        digests.add(json.loads(done.stdout)["history_sha256"])
    assert len(digests) == 1


@pytest.mark.timeout(1500)  # 200 seeds: 1.5-5 minutes on two idle cores, 15 under heavy load
def test_ci_batch_has_no_violation() -> None:
    summaries = run_batch(list(range(1, CI_SEEDS + 1)), CI_OPS, ALL_FIXES, jobs=2)
    failing = {s.seed: s.described[:2] for s in summaries if not s.ok}
    assert not failing, "\n".join(
        f"seed {seed}:\n" + "\n".join(texts) for seed, texts in failing.items()
    )
    assert all(s.quiescent for s in summaries)
    assert sum(s.invoked for s in summaries) >= CI_SEEDS * CI_OPS


@pytest.mark.timeout(300)  # 100 short seeds: 13-14 CPU s, under 10 s on two idle cores
@pytest.mark.parametrize("ops", [50, 100])
def test_short_ci_batch_has_no_violation(ops: int) -> None:
    summaries = run_batch(list(range(1, SHORT_SEEDS + 1)), ops, ALL_FIXES, jobs=2)
    failing = {s.seed: s.described[:2] for s in summaries if not s.ok}
    assert not failing, "\n".join(
        f"seed {seed}: sharetxn chaos replay {seed} --ops {ops}\n" + "\n".join(texts)
        for seed, texts in failing.items()
    )
    assert all(s.quiescent for s in summaries)
    # A drain that idles until its deadline polls for 300 simulated seconds (some 12,000
    # operations); quiescent short seeds stay far below that.
    assert sum(s.invoked for s in summaries) < SHORT_SEEDS * 2_000


def test_cli_run_reports_failing_seeds_with_their_replay_command(tmp_path: Path) -> None:
    done = _cli(
        "run",
        "--seeds",
        "2",
        "--ops",
        "300",
        "--first-seed",
        "1",
        "--json",
        "--mutation",
        "lso-ignores-open-txns",
        "--assume-fixed",
        "all",
        "--history-dir",
        str(tmp_path),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["failing_seeds"]
    failing = report["failing_seeds"][0]
    entry = next(s for s in report["seeds"] if s["seed"] == failing)
    assert entry["replay"].startswith(f"sharetxn chaos replay {failing} --ops 300")
    assert "--mutation lso-ignores-open-txns" in entry["replay"]
    assert (tmp_path / f"seed-{failing}.jsonl").exists()


def test_cli_run_passes_and_replay_writes_the_history(tmp_path: Path) -> None:
    done = _cli("run", "--seeds", "2", "--ops", "300", "--assume-fixed", "all")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no invariant violated" in done.stdout
    history = tmp_path / "h.jsonl"
    done = _cli("replay", "3", "--ops", "300", "--assume-fixed", "all", "--history", str(history))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = history.read_text().splitlines()
    assert lines and all(json.loads(line)["type"] for line in lines)


def test_cli_rejects_unknown_names() -> None:
    done = _cli("run", "--seeds", "1", "--mutation", "no-such-bug")
    assert done.returncode == 64
    assert "unknown mutation" in done.stderr
