"""docs/first-ten-minutes.md runs as written: every step, in order, against its own broker."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PAGE = Path(__file__).resolve().parents[2] / "docs" / "first-ten-minutes.md"
STEP = re.compile(r"<!-- step: ([\w-]+) -->\n```(bash|python)\n(.*?)```", re.S)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.skipif(
    shutil.which("kcat") is None or shutil.which("curl") is None,
    reason="the page's shell steps use kcat and curl",
)
def test_first_ten_minutes(tmp_path: Path) -> None:
    kafka_port, metrics_port = free_port(), free_port()
    text = PAGE.read_text().replace("127.0.0.1:9092", f"127.0.0.1:{kafka_port}")
    text = text.replace("9404", str(metrics_port))
    steps = STEP.findall(text)
    assert [name for name, _, _ in steps][:3] == ["broker", "topic", "produce"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    name, _, command = steps[0]
    argv = shlex.split(command)
    assert argv[0] == "sharetxn"  # run by this interpreter: no wrapper process between
    broker = subprocess.Popen(
        [sys.executable, "-m", "chaos.cli", *argv[1:]],
        cwd=tmp_path,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert broker.stdout is not None
        for line in broker.stdout:
            if "ready on" in line:
                break
        outputs: dict[str, str] = {}
        for name, language, code in steps[1:]:
            argv = (
                ["bash", "-euo", "pipefail", "-c", code]
                if language == "bash"
                else [sys.executable, "-c", code]
            )
            done = subprocess.run(
                argv,
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, f"step {name} failed:\n{done.stdout}\n{done.stderr}"
            outputs[name] = done.stdout
    finally:
        broker.send_signal(signal.SIGTERM)
        broker.communicate(timeout=60)
    assert broker.returncode == 0  # SIGTERM stops it cleanly
    assert "PartitionCount: 3" in outputs["topic"]
    assert "read 100 records" in outputs["consumer-group"]
    assert "first-readers" in outputs["describe-group"]
    assert "read 100 records" in outputs["share-consumer"]
    assert "copied 100 records exactly once" in outputs["exactly-once"]
    assert outputs["read-copy"].strip() == "100"
    assert "Dynamic configs for group first-share are:\n" in outputs["share-group"]
    assert "  share.auto.offset.reset=earliest sensitive=false" in outputs["share-group"]
    acknowledged = [x for x in outputs["metrics"].splitlines() if 'group_id="first-share"' in x]
    assert acknowledged and acknowledged[0].startswith("sharetxn_share_group_records_acknowledged")
    assert float(acknowledged[0].rsplit(" ", 1)[1]) == 100
    assert outputs["not-found"].splitlines() == ["exit code 66"] * 4  # errors: on stderr
