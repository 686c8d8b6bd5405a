"""``sharetxn chaos real``: a real broker process and real clients under kill -9 and SIGSTOP.

The long test runs 60 s of faults plus the drain and the verification (about 100 s); the
others check the pieces without processes: the history merge, the direct checks and the CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.checker import check
from chaos.history import FINAL, NEMESIS
from chaos.real import RealOptions, RealRun, merge_histories
from chaos.real_verify import FinalState, direct_checks, final_events
from chaos.real_worker import Recorder
from tests.sharetxn_cli import run_cli

pytestmark = pytest.mark.chaos


def test_sixty_seconds_of_real_faults_violate_nothing(tmp_path: Path) -> None:
    options = RealOptions(
        duration_s=60,
        seed=20240607,
        clients=3,
        records=1500,
        drain_timeout_s=45,
        run_dir=tmp_path / "run",
    )
    result = RealRun(options).run()
    assert result.ok, "\n".join(result.described)
    assert result.quiescent
    assert (result.outputs, result.duplicates, result.lost) == (1500, 0, 0)
    assert sum(result.faults.values()) >= 20, result.faults
    assert len(result.faults) >= 4, f"most fault kinds are drawn in 60 s: {result.faults}"
    assert result.faults["operator"] > 0, "the recovery tool ran against the live broker (I16)"
    assert result.commits > 0 and result.aborts > 0
    assert result.fenced + result.zombie_exits > 0, "paused clients outlive their epoch"


def _recorder(tmp_path: Path, name: str) -> Recorder:
    return Recorder(tmp_path / f"{name}.jsonl", 0, name)


def test_merge_orders_by_time_keeps_each_process_ops_and_closes_killed_ones(
    tmp_path: Path,
) -> None:
    a, b = _recorder(tmp_path, "c0.1"), _recorder(tmp_path, "c1.1")
    op_a = a.invoke("txn", {"tag": "c0.1.1"}, t=10)
    b.invoke("txn", {"tag": "c1.1.1"}, t=5)
    a.complete(op_a, "ok", "txn", {"outcome": "commit"})
    a.close()
    b.close()
    with (tmp_path / "c1.1.jsonl").open("a") as torn:
        torn.write('{"t": 7, "p": "c1.1", "ty')  # kill -9 in the middle of a line
    harness = [{"t": 6, "p": NEMESIS, "type": "event", "f": "client-kill", "v": {}, "op": -1}]
    history = merge_histories(sorted(tmp_path.glob("*.jsonl")), harness, end_ms=99)
    got = [(e.time, e.process, e.type, e.f) for e in history.entries]
    assert got[:3] == [
        (5, "c1.1", "invoke", "txn"),
        (6, NEMESIS, "event", "client-kill"),
        (10, "c0.1", "invoke", "txn"),
    ]
    assert (got[-1][1], got[-1][2]) == ("c1.1", "info"), "a killed client's txn is unknown"
    assert history.invocations == 2
    ops = {e.op for e in history.entries if e.type != "event"}
    assert len(ops) == 2, "operation ids of two processes do not collide"


def _state(outputs: dict[int, list[tuple[int, str]]]) -> FinalState:
    return FinalState(
        inputs={0: [(0, "i0"), (1, "i1"), (2, "i2")]},
        outputs=outputs,
        lso={0: (len(outputs.get(0, [])), len(outputs.get(0, [])))},
        spso={0: (3, 3)},
        txns={"c0": "CompleteCommit", "c0-2pc": "Empty"},
    )


def test_direct_checks_count_duplicates_losses_and_leftovers() -> None:
    good = _state({0: [(0, "i0@0:0|c0.1.1"), (1, "i1@0:1|c0.1.1"), (2, "i2@0:2|c0.1.2")]})
    assert direct_checks(good, {"i0", "i1", "i2"}, {}, 10).violations == []
    bad = _state({0: [(0, "i0@0:0|c0.1.1"), (1, "i0@0:0|c1.1.1")]})
    bad.spso = {0: (2, 3)}
    bad.txns["c1"] = "Ongoing"
    bad.pending_acks = {7: 1}
    result = direct_checks(bad, {"i0", "i1", "i2"}, {"i2": 10}, 10)
    assert (result.duplicates, result.lost, result.outputs) == (1, 2, 2)
    assert [v.invariant for v in result.violations] == ["R1", "R2", "R3", "R4"]
    assert "1 of them reached the delivery count limit" in result.violations[1].message


def test_the_checker_reads_the_real_final_state() -> None:
    """A real history: client operations and the final reads, no broker-side events."""
    rec_entries = [
        {"t": 1, "p": "c0.1", "type": "invoke", "f": "txn", "v": {"tag": "c0.1.1"}, "op": 0},
        {"t": 2, "p": "c0.1", "type": "ok", "f": "txn", "v": {"outcome": "abort"}, "op": 0},
    ]
    visible_abort = _state({0: [(0, "i0@0:0|c0.1.1")]})
    events = [
        {"t": 3, "p": FINAL, "type": "event", "f": f, "v": v, "op": -1}
        for f, v in final_events(visible_abort, True)
    ]
    history = merge_histories([], rec_entries + events, end_ms=4)
    assert {v.invariant for v in check(history.entries)} >= {"I3", "I5"}


def test_cli_help_explains_the_real_mode() -> None:
    out = run_cli("chaos", "real", "--help", check=True, timeout=60).stdout
    for word in (
        "kill -9",
        "SIGSTOP",
        "zombie",
        "read_committed",
        "--duration",
        "--seed",
        "--keep",
    ):
        assert word in out


def test_cli_rejects_bad_numbers() -> None:
    done = run_cli("chaos", "real", "--duration", "0", "--json", timeout=60)
    assert done.returncode == 64
    assert "must be positive" in done.stderr
    assert done.stdout == ""


def test_a_used_run_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "stop").write_text("")
    with pytest.raises(ValueError, match="not empty"):
        RealRun(RealOptions(run_dir=tmp_path))
