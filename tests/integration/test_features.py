"""ApiVersions' features: the levels of Kafka's features sharetxn implements (v3 and v4)."""

from __future__ import annotations

from pathlib import Path

from coordinator.launcher import LocalBroker
from producer.protocol.connection import BrokerConnection
from txn.api_keys import ApiKey


def _api_versions(
    bootstrap: str, version: int
) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    host, _, port = bootstrap.rpartition(":")
    conn = BrokerConnection(host, int(port))
    try:
        body = {"client_software_name": "test", "client_software_version": "1"}
        resp = conn.request(ApiKey.API_VERSIONS, version, body)
    finally:
        conn.close()
    supported = {
        str(f.name): (int(f.min_version), int(f.max_version)) for f in resp.supported_features
    }
    finalized = {str(f.name): int(f.max_version_level) for f in resp.finalized_features}
    return supported, finalized


def test_features_advertised(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "data") as broker:
        supported_v4, finalized = _api_versions(broker.bootstrap_servers, 4)
        supported_v3, finalized_v3 = _api_versions(broker.bootstrap_servers, 3)
    assert (
        finalized
        == finalized_v3
        == {
            "group.version": 1,
            "share.version": 1,
            "transaction.version": 1,  # not 2: KIP-890 part 2 needs Produce v12, not served
            "share.transaction.version": 1,
        }
    )
    assert supported_v4 == {
        "group.version": (0, 1),
        "share.version": (0, 1),
        "transaction.version": (0, 1),
        "share.transaction.version": (1, 1),
    }
    # Before v4 (KIP-1022) a range starting at 0 is left out, as Kafka does.
    assert supported_v3 == {"share.transaction.version": (1, 1)}
