"""``sharetxn configs`` on client quota entities, as kafka-configs.sh."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from tests.sharetxn_cli import run_cli
from txn.exit_codes import ExitCode

pytestmark = pytest.mark.integration


def configs(b: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("configs", *args, "--bootstrap-server", b, timeout=90)


def test_alter_and_describe_quotas(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "d") as broker:
        b = broker.bootstrap_servers
        done = configs(
            b,
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--alter",
            "--add-config",
            "producer_byte_rate=1024,request_percentage=50.5",
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "Completed updating config for user alice."
        done = configs(
            b,
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--entity-type",
            "clients",
            "--entity-default",
            "--alter",
            "--add-config",
            "consumer_byte_rate=2048",
        )
        assert done.returncode == 0, done.stderr
        done = configs(
            b,
            "--entity-type",
            "clients",
            "--entity-default",
            "--alter",
            "--add-config",
            "producer_byte_rate=1000000000",
        )
        assert done.stdout.strip() == (
            "Completed updating default config for clients in the cluster."
        )
        done = configs(b, "--entity-type", "clients", "--entity-default", "--describe")
        assert done.stdout.strip() == (
            "Quota configs for the default client-id are producer_byte_rate=1.0E9"
        )
        done = configs(b, "--entity-type", "users", "--entity-name", "alice", "--describe")
        assert done.stdout.strip() == (
            "Quota configs for user-principal 'alice' are producer_byte_rate=1024.0,"
            " request_percentage=50.5"
        )
        done = configs(b, "--entity-type", "users", "--entity-type", "clients", "--describe")
        assert done.stdout.strip() == (
            "Quota configs for user-principal 'alice', the default client-id are"
            " consumer_byte_rate=2048.0"
        )
        done = configs(
            b,
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--alter",
            "--delete-config",
            "consumer_byte_rate",
        )
        assert done.returncode != 0
        assert "Invalid config(s): consumer_byte_rate" in done.stderr
        done = configs(
            b,
            "--entity-type",
            "clients",
            "--entity-default",
            "--alter",
            "--add-config",
            "producer_byte_rate=1.5",
        )
        assert done.returncode != 0
        assert "producer_byte_rate cannot be a fractional value." in done.stderr
        done = configs(
            b,
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--alter",
            "--delete-config",
            "producer_byte_rate,request_percentage",
        )
        assert done.returncode == 0, done.stderr
        done = configs(b, "--entity-type", "users", "--entity-name", "alice", "--describe")
        assert done.stdout.strip() == ""
        # Entity types of quotas do not mix with the others.
        done = configs(b, "--entity-type", "topics", "--entity-type", "users", "--describe")
        assert done.returncode == ExitCode.USAGE
