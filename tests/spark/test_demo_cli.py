"""``sharetxn demo`` end to end, small: the CLI the README starts with."""

from __future__ import annotations

import os

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
