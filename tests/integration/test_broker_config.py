"""Broker configs are checked as Kafka checks them, from --set and from a server.properties."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.sharetxn_cli import broker_once
from txn.config import BrokerConfig
from txn.errors import InvalidConfigError

pytestmark = pytest.mark.integration


def broker(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return broker_once(tmp_path / "d", *args)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "num.partitions=0",
            "Invalid value 0 for configuration num.partitions: Value must be at least 1",
        ),
        (
            "log.retention.check.interval.ms=-5",
            "log.retention.check.interval.ms: Value must be at least 1",
        ),
        ("group.share.delivery.count.limit=11", "Value must be no more than 10"),
        (
            "group.min.session.timeout.ms=2000000",
            "must not be greater than group.max.session.timeout.ms",
        ),
        ("transaction.max.timeout.ms=soon", "expects an integer"),
    ],
)
def test_out_of_range_settings_refuse_to_start(tmp_path: Path, setting: str, message: str) -> None:
    done = broker(tmp_path, "--set", setting)
    assert done.returncode == 64, done.stderr
    assert message in done.stderr
    assert not (tmp_path / "d" / "meta.properties").exists()  # refused before touching the dir


def test_server_properties_file(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text(
        "# a Kafka server.properties\n"
        "process.roles=broker,controller\n"
        "num.partitions: 0\n"
        "log.dirs=/var/lib/kafka\n"
    )
    done = broker(tmp_path, "--config", str(props))
    assert done.returncode == 64
    assert "num.partitions: Value must be at least 1" in done.stderr
    assert "ignoring 2 config(s) this broker does not use: log.dirs, process.roles" in done.stderr
    # --set wins over the file
    props.write_text("num.partitions=0\ngroup.share.delivery.count.limit=\\\n  11\n")
    done = broker(tmp_path, "--config", str(props), "--set", "num.partitions=2")
    assert done.returncode == 64
    assert "group.share.delivery.count.limit: Value must be no more than 10" in done.stderr


def test_validate_in_process() -> None:
    BrokerConfig().validate()
    with pytest.raises(InvalidConfigError, match="at least 1000"):
        BrokerConfig({"group.share.record.lock.duration.ms": "10"}).validate()
