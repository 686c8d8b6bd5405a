"""Command-line checks that need no broker: usage errors exit 64, help has examples."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from chaos.cli.main import main as sharetxn
from chaos.cli.recovery_support import parse_duration_ms
from producer.twophase.audit import AuditLog, previously_applied, read_audit_log


@pytest.mark.parametrize(
    "argv",
    [
        ["txn", "commit", "--transactional-id", "t"],  # missing --producer-id/--epoch
        ["txn", "list", "--bogus"],
        ["txn"],
        ["txn", "abort", "--transactional-id", "t", "--producer-id", "x", "--epoch", "1"],
        ["recover"],
        ["recover", "--checkpoint", "/tmp", "--scan-interval", "-1"],
    ],
)
def test_usage_errors_exit_64(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        sharetxn(argv)
    assert exc.value.code == 64
    capsys.readouterr()


def test_semantic_usage_errors_exit_64(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = sharetxn(
        [
            "txn",
            "commit",
            "--transactional-id",
            "t",
            "--producer-id",
            "1",
            "--epoch",
            "0",
            "--prepared-state",
            '{"transactional_id": "t", "producer_id": 2, "epoch": 0}',
            "--bootstrap-server",
            "127.0.0.1:1",
        ]
    )
    assert code == 64
    assert sharetxn(["recover", "--checkpoint", str(tmp_path / "nope")]) == 64
    capsys.readouterr()


@pytest.mark.parametrize(
    "action",
    [
        "list",
        "describe",
        "describe-producers",
        "find-hanging",
        "commit",
        "abort",
        "force-terminate",
        "forget",
    ],
)
def test_every_subcommand_has_examples(action: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        sharetxn(["txn", action, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and f"sharetxn txn {action}" in out and "exit codes" in out


def test_recover_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        sharetxn(["recover", "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "intents/N.json" in out


def test_durations() -> None:
    assert parse_duration_ms("500") == 500
    assert parse_duration_ms("90s") == 90_000
    assert parse_duration_ms("15m") == 900_000
    assert parse_duration_ms("2h") == 7_200_000
    assert parse_duration_ms("1d") == 86_400_000
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration_ms("soon")


def test_audit_log_is_append_only_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "a" / "audit.jsonl"
    log = AuditLog(path, operator="alice", command="txn abort")
    step = {"transactional_id": "t", "producer_id": 1, "producer_epoch": 2, "action": "abort"}
    log.write("begin", {"step": step})
    log.write("end", {"step": step, "outcome": "applied"})
    with path.open("a") as f:
        f.write('{"torn": ')  # a crash mid-line is tolerated by readers
    events = read_audit_log(path)
    assert [e["event"] for e in events] == ["begin", "end"]
    assert {e["operator"] for e in events} == {"alice"}
    assert all(e["tool_version"] and e["ts"] and e["run_id"] == log.run_id for e in events)
    assert previously_applied(path, "t", 1, 2) is not None
    assert previously_applied(path, "t", 1, 3) is None
