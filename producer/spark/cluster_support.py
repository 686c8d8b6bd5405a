"""What the cluster behind a ``kafka-share`` source serves, told by ApiVersions at start.

Share groups (KIP-932) need the share APIs and, on Apache Kafka 4.1+, the finalized
``share.version`` feature (the APIs stay advertised when an operator disables it).
Exactly-once needs KIP-1289 (TxnShareAcknowledge, AddShareAcksToTxn), told by the
finalized ``share.transaction.version`` feature: Apache Kafka serves other APIs under the
same keys and no Kafka release has KIP-1289.  ``refuse_unsupported`` raises a
``SparkConfigError`` naming what the user can do instead, before any batch runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from producer.protocol.connection import BrokerConnection
from producer.protocol.security import ClientSecurity
from producer.spark.errors import SparkConfigError
from producer.spark.options import AT_LEAST_ONCE, SourceOptions
from txn.api_keys import ApiKey
from txn.errors import NetworkError
from txn.kip1289_schema import (
    KIP1289_FEATURE,
    KIP1289_FEATURE_LEVEL,
)

#: The KIP-932 APIs a share consumer needs.
SHARE_APIS: dict[int, str] = {
    key: key.api_name
    for key in (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE)
}
SHARE_FEATURE = "share.version"
DOCS = 'docs/spark.md, "Share groups without KIP-1289"'


@dataclass(frozen=True, slots=True)
class ClusterSupport:
    address: str
    #: why share groups are unusable there, or None when they are served
    share_groups_off: str | None
    kip1289: bool


def probe(bootstrap_servers: str, client_config: Mapping[str, Any]) -> ClusterSupport:
    """ApiVersions of the first bootstrap broker that answers."""
    security = ClientSecurity.from_config(dict(client_config))
    last: Exception | None = None
    for entry in bootstrap_servers.split(","):
        host, _, port = entry.strip().rpartition(":")
        if not host or not port.isdigit():
            continue
        conn = BrokerConnection(
            host.strip("[]"),
            int(port),
            client_id="sharetxn-spark-source",
            timeout_s=10.0,
            security=security,
        )
        try:
            conn.connect()
        except (NetworkError, OSError) as exc:
            last = exc
            continue
        try:
            return support_of(conn.address, conn.versions, conn.features)
        finally:
            conn.close()
    msg = f"kafka-share: no bootstrap broker of {bootstrap_servers!r} answered: {last}"
    raise NetworkError(msg)


def support_of(
    address: str, versions: Mapping[int, tuple[int, int]], features: Mapping[str, int]
) -> ClusterSupport:
    kip1289 = features.get(KIP1289_FEATURE, 0) >= KIP1289_FEATURE_LEVEL and all(
        key in versions for key in (ApiKey.TXN_SHARE_ACKNOWLEDGE, ApiKey.ADD_SHARE_ACKS_TO_TXN)
    )
    missing = [name for key, name in SHARE_APIS.items() if key not in versions]
    off: str | None = None
    if missing:
        off = f"it does not serve the share-group APIs ({', '.join(missing)})"
    elif features.get(SHARE_FEATURE, 0) < 1 and not kip1289:
        off = f"the {SHARE_FEATURE} feature is not enabled (finalized level 0)"
    return ClusterSupport(address, off, kip1289)


def refuse_unsupported(opts: SourceOptions, support: ClusterSupport) -> None:
    """Raise ``SparkConfigError`` unless the cluster can run this source as configured."""
    if support.share_groups_off is not None:
        msg = (
            f"kafka-share: the cluster at {support.address} has share groups (KIP-932) off: "
            f"{support.share_groups_off}. Either enable them (Apache Kafka 4.1 or later: "
            f"kafka-features.sh --bootstrap-server {support.address} upgrade --feature "
            f'{SHARE_FEATURE}=1), or read with Spark\'s format("kafka") source and a consumer '
            f"group and write with the ExactlyOnce sink ({DOCS})"
        )
        raise SparkConfigError(msg)
    if support.kip1289 or opts.at_least_once:
        return
    msg = (
        f"kafka-share: the cluster at {support.address} does not support KIP-1289: it lacks "
        f"TxnShareAcknowledge (API {ApiKey.TXN_SHARE_ACKNOWLEDGE}, feature {KIP1289_FEATURE}), "
        "so share-group acknowledgements cannot join a transaction and this source cannot be "
        "exactly once there (no Apache Kafka release has KIP-1289). Options: (1) run "
        "against a broker with KIP-1289 (sharetxn); (2) opt in to at least once with "
        f'.option("deliverySemantics", "{AT_LEAST_ONCE}"): records are acknowledged '
        "after Spark commits the batch and a crash delivers them again; (3) for exactly "
        'once on this cluster, read with Spark\'s format("kafka") source and a consumer '
        f"group and write with the ExactlyOnce sink ({DOCS})"
    )
    raise SparkConfigError(msg)


def check_cluster(opts: SourceOptions) -> None:
    """Probe the cluster and refuse what it cannot run (network errors propagate)."""
    refuse_unsupported(opts, probe(opts.bootstrap_servers, dict(opts.client_config)))
