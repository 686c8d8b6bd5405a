"""The data directory: one broker at a time (``.lock``), and a stable identity
(``meta.properties``) served as the cluster id."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from coordinator.launcher import LocalBroker
from coordinator.log.data_dir import DataDirError, DataDirLock, ensure_meta_properties
from tests.sharetxn_cli import broker_once

pytestmark = pytest.mark.integration


def _cluster_id(bootstrap: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return str(admin.describe_cluster().result(30).cluster_id)


def test_a_second_broker_on_the_same_directory_exits_at_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with LocalBroker(data_dir=data) as first:
        second = broker_once(data)
        assert second.returncode == 1
        assert "is in use by another broker" in second.stderr
        assert ".lock" in second.stderr
        cluster = _cluster_id(first.bootstrap_servers)  # the first one never noticed
        first.kill()  # kill -9 leaves no stale lock: the process held it
        first.start()
        assert _cluster_id(first.bootstrap_servers) == cluster  # stable across restarts
    props = (data / "meta.properties").read_text()
    assert f"cluster.id={cluster}" in props and "node.id=1" in props


def test_lock_and_identity_in_process(tmp_path: Path) -> None:
    with DataDirLock(tmp_path), pytest.raises(DataDirError, match="in use by another broker"):
        DataDirLock(tmp_path).acquire()
    DataDirLock(tmp_path).acquire()  # released on exit
    cluster = ensure_meta_properties(tmp_path)
    assert ensure_meta_properties(tmp_path) == cluster and len(cluster) == 22
    (tmp_path / "meta.properties").write_text("version=1\ncluster.id=x\nnode.id=7\n")
    with pytest.raises(DataDirError, match="belongs to node 7"):
        ensure_meta_properties(tmp_path)
