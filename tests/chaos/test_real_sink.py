"""``sharetxn chaos real --workload sink``: sink worker processes under kill -9 and SIGSTOP."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.real_sink import SinkChaosOptions, SinkChaosRun

pytestmark = pytest.mark.chaos


def test_sink_workers_under_real_faults_copy_every_record_exactly_once(tmp_path: Path) -> None:
    options = SinkChaosOptions(
        duration_s=20,
        seed=1302,
        workers=3,
        records=600,
        drain_timeout_s=45,
        run_dir=tmp_path / "run",
    )
    result = SinkChaosRun(options).run()
    assert result.ok, result.as_dict()
    assert result.quiescent
    assert (result.outputs, result.duplicates, result.lost) == (600, 0, 0)
    assert sum(result.faults.values()) >= 6, result.faults
    assert result.faults["worker-kill"] > 0, result.faults
