"""The API versions this broker serves: exactly what is implemented for clients.

APIs Kafka serves only between brokers and controllers are neither advertised nor served
here: the share-group state RPCs (InitializeShareGroupState, ReadShareGroupState,
WriteShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary) are calls
inside this broker (``coordinator.share.persister``), and nothing of KRaft's is served.  A
request for any of them gets UNSUPPORTED_VERSION, as an unknown API does.  WriteTxnMarkers
is served as Kafka serves it, to a client with CLUSTER_ACTION (``kafka-transactions.sh
abort``; ``coordinator.protocol.client_markers``); the transaction coordinator's own
markers go to the partitions through ``coordinator.marker_channel``.
"""

from __future__ import annotations

from typing import Final

from txn.api_keys import ApiKey

# api key -> (min version, max version)
_VERSIONS: Final[dict[ApiKey, tuple[int, int]]] = {
    ApiKey.PRODUCE: (3, 10),
    ApiKey.FETCH: (4, 16),
    ApiKey.LIST_OFFSETS: (1, 11),
    ApiKey.METADATA: (0, 12),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 6),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
    ApiKey.END_TXN: (0, 5),
    ApiKey.WRITE_TXN_MARKERS: (1, 2),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.UPDATE_FEATURES: (0, 2),  # the levels are fixed (coordinator.protocol.features)
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 1),
    ApiKey.OFFSET_COMMIT: (2, 9),
    ApiKey.OFFSET_FETCH: (1, 9),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
    ApiKey.TXN_OFFSET_COMMIT: (0, 4),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.SHARE_GROUP_HEARTBEAT: (1, 1),
    ApiKey.SHARE_GROUP_DESCRIBE: (1, 1),
    ApiKey.SHARE_FETCH: (1, 2),
    ApiKey.SHARE_ACKNOWLEDGE: (1, 2),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.TXN_SHARE_ACKNOWLEDGE: (0, 0),  # KIP-1289 (DESIGN §3)
    ApiKey.ADD_SHARE_ACKS_TO_TXN: (0, 0),  # KIP-1289 (DESIGN §3)
    ApiKey.DESCRIBE_SHARE_PENDING_ACKS: (0, 0),  # sharetxn admin API (recovery tool)
    # Security (coordinator/security): SASL (KIP-152; handshake v1 only), ACLs, SCRAM users.
    ApiKey.SASL_HANDSHAKE: (1, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    # Delegation tokens (KIP-48, KIP-373; coordinator/protocol/token_handlers.py).
    ApiKey.CREATE_DELEGATION_TOKEN: (1, 3),
    ApiKey.RENEW_DELEGATION_TOKEN: (1, 2),
    ApiKey.EXPIRE_DELEGATION_TOKEN: (1, 2),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: (1, 3),
    # Client quotas (coordinator/quotas; KIP-546).
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
}
#: api key -> (Kafka's name of the API, min version, max version)
SUPPORTED: Final[dict[int, tuple[str, int, int]]] = {
    key: (key.api_name, lo, hi) for key, (lo, hi) in _VERSIONS.items()
}


def is_supported(api_key: int, api_version: int) -> bool:
    entry = SUPPORTED.get(api_key)
    return entry is not None and entry[1] <= api_version <= entry[2]
