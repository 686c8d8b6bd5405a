"""``sharetxn demo`` end to end, small: the CLI the README starts with."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.sharetxn_cli import run_cli

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(400)]


def test_sharetxn_demo_kills_the_driver_and_stays_exactly_once() -> None:
    # The default batch size (30,000) is cut to a third of the input: 3 batches of 100,
    # the driver killed in the second, whatever --records.
    done = run_cli(
        "demo",
        "--records",
        "300",
        timeout=360,
        env={**os.environ, "COLUMNS": "120"},
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "100 records a batch" in out
    assert "SIGKILL of the Spark driver during batch 1" in out
    # The second driver warms up beforehand; it starts the query only after the kill.
    assert out.index("standby driver starting") < out.index("SIGKILL of the Spark driver")
    kills = next(r for r in out.splitlines() if "driver SIGKILLs" in r)
    assert "1 (batch 1)" in kills, kills
    redeliveries = next(r for r in out.splitlines() if "redeliveries" in r)
    assert int(redeliveries.split()[-2]) > 0, redeliveries
    assert "exactly once: every input is in the output once" in out
    assert any(r.split()[1:2] == ["records/s"] for r in out.splitlines()), out[-3000:]
    lag = next(r for r in out.splitlines() if "commit lag p50 / p99" in r)
    assert "batches)" in lag, lag  # every committed batch measured from its commits/N
    for line in ("duplicates", "lost", "unacknowledged inputs", "open transactions"):
        row = next(r for r in out.splitlines() if line in r)
        assert row.split()[-2] == "0", row


def _processes_naming(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def test_sigterm_stops_the_demos_broker_and_drivers() -> None:
    """``timeout`` or a supervisor stops the demo with SIGTERM: it exits 143 and leaves no
    broker or Spark driver behind (they run in sessions of their own)."""
    with subprocess.Popen(
        [sys.executable, "-m", "chaos.cli", "demo", "--records", "300"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"},
    ) as demo:
        assert demo.stdout is not None
        work = ""
        deadline = time.monotonic() + 120
        for line in demo.stdout:
            if line.startswith("broker ") and ", data in " in line:
                work = line.rsplit(", data in ", 1)[1].strip()
                break
            assert time.monotonic() < deadline, "the demo never started its broker"
        assert work, "no broker line"
        time.sleep(3)  # the first driver and the broker are running
        assert _processes_naming(work), "the demo's processes should be running now"
        demo.send_signal(signal.SIGTERM)
        demo.stdout.read()
        assert demo.wait(60) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 20
    while _processes_naming(work) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_naming(work) == [], f"left running after SIGTERM: {work}"
