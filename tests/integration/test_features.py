"""ApiVersions' features: the levels of Kafka's features sharetxn implements (v3 and v4)."""

from __future__ import annotations

import datetime
from pathlib import Path

from coordinator.launcher import LocalBroker
from producer.protocol.connection import BrokerConnection
from txn.api_keys import ApiKey
from txn.errors import ErrorCode


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
            "share.version": 2,  # with KIP-1191 dead-letter queues, as Kafka 4.4
            "transaction.version": 1,  # not 2: KIP-890 part 2 needs Produce v12, not served
            "share.transaction.version": 1,
        }
    )
    # Each is supported at its level alone: sharetxn cannot turn share groups or KIP-848 off.
    assert (
        supported_v4
        == supported_v3
        == {
            "group.version": (1, 1),
            "share.version": (2, 2),
            "transaction.version": (1, 1),
            "share.transaction.version": (1, 1),
        }
    )


def _update(bootstrap: str, version: int, *updates: tuple[str, int]) -> tuple[str, list[str]]:
    host, _, port = bootstrap.rpartition(":")
    conn = BrokerConnection(host, int(port))
    try:
        body = {
            "timeout": datetime.timedelta(seconds=30),
            "validate_only": False,
            "feature_updates": [
                {
                    "feature": f,
                    "max_version_level": level,
                    "upgrade_type": 1,
                    "allow_downgrade": False,
                }
                for f, level in updates
            ],
        }
        resp = conn.request(ApiKey.UPDATE_FEATURES, version, body)
    finally:
        conn.close()
    return ErrorCode(int(resp.error_code)).name, [
        str(r.feature) for r in getattr(resp, "results", ())
    ]


def test_update_features_accepts_only_the_current_levels(tmp_path: Path) -> None:
    """As Kafka's controller for levels it does not support: all or nothing."""
    with LocalBroker(data_dir=tmp_path / "data") as broker:
        bootstrap = broker.bootstrap_servers
        ok = _update(bootstrap, 1, ("group.version", 1), ("transaction.version", 1))
        assert ok == ("NONE", ["group.version", "transaction.version"])
        assert _update(bootstrap, 2, ("share.version", 2)) == ("NONE", [])
        for level in (0, 1, -1):
            assert _update(bootstrap, 1, ("group.version", 1), ("share.version", level)) == (
                "INVALID_UPDATE_VERSION",
                [],
            )
        assert _update(bootstrap, 0, ("metadata.version", 33))[0] == "INVALID_UPDATE_VERSION"
        _supported, finalized = _api_versions(bootstrap, 4)
        assert finalized["share.version"] == 2
