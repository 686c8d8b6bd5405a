"""The API versions this broker serves: exactly what is implemented for clients.

APIs Kafka serves only between brokers and controllers are neither advertised nor served
here: the share-group state RPCs (InitializeShareGroupState, ReadShareGroupState,
WriteShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary: 83-87) are calls
inside this broker (``coordinator.share.persister``), WriteTxnMarkers (27) goes from the
transaction coordinator to the partitions through ``coordinator.marker_channel``, and
nothing of KRaft's is served.  A request for any of them gets UNSUPPORTED_VERSION, as an
unknown API does.
"""

from __future__ import annotations

from typing import Final

# api key -> (name, min version, max version)
SUPPORTED: Final[dict[int, tuple[str, int, int]]] = {
    0: ("Produce", 3, 10),
    1: ("Fetch", 4, 16),
    2: ("ListOffsets", 1, 7),
    3: ("Metadata", 0, 12),
    10: ("FindCoordinator", 0, 6),
    18: ("ApiVersions", 0, 3),
    19: ("CreateTopics", 2, 7),
    20: ("DeleteTopics", 1, 6),
    21: ("DeleteRecords", 0, 2),
    22: ("InitProducerId", 0, 6),
    24: ("AddPartitionsToTxn", 0, 5),
    26: ("EndTxn", 0, 5),
    32: ("DescribeConfigs", 1, 4),
    33: ("AlterConfigs", 0, 2),
    35: ("DescribeLogDirs", 1, 4),
    37: ("CreatePartitions", 0, 3),
    60: ("DescribeCluster", 0, 1),
    61: ("DescribeProducers", 0, 0),
    65: ("DescribeTransactions", 0, 0),
    66: ("ListTransactions", 0, 1),
    8: ("OffsetCommit", 2, 9),
    9: ("OffsetFetch", 1, 9),
    11: ("JoinGroup", 0, 9),
    12: ("Heartbeat", 0, 4),
    13: ("LeaveGroup", 0, 5),
    14: ("SyncGroup", 0, 5),
    15: ("DescribeGroups", 0, 5),
    25: ("AddOffsetsToTxn", 0, 4),
    28: ("TxnOffsetCommit", 0, 4),
    47: ("OffsetDelete", 0, 0),
    68: ("ConsumerGroupHeartbeat", 0, 1),
    69: ("ConsumerGroupDescribe", 0, 1),
    16: ("ListGroups", 0, 5),
    42: ("DeleteGroups", 0, 2),
    44: ("IncrementalAlterConfigs", 0, 1),
    76: ("ShareGroupHeartbeat", 1, 1),
    77: ("ShareGroupDescribe", 1, 1),
    78: ("ShareFetch", 1, 2),
    79: ("ShareAcknowledge", 1, 2),
    90: ("DescribeShareGroupOffsets", 0, 1),
    91: ("AlterShareGroupOffsets", 0, 0),
    92: ("DeleteShareGroupOffsets", 0, 0),
    93: ("TxnShareAcknowledge", 0, 0),  # KIP-1289 (DESIGN §3)
    94: ("AddShareAcksToTxn", 0, 0),  # KIP-1289 (DESIGN §3)
    95: ("DescribeSharePendingAcks", 0, 0),  # sharetxn admin API (recovery tool)
    # Security (coordinator/security): SASL (KIP-152; handshake v1 only), ACLs, SCRAM users.
    17: ("SaslHandshake", 1, 1),
    36: ("SaslAuthenticate", 0, 2),
    29: ("DescribeAcls", 1, 3),
    30: ("CreateAcls", 1, 3),
    31: ("DeleteAcls", 1, 3),
    50: ("DescribeUserScramCredentials", 0, 0),
    51: ("AlterUserScramCredentials", 0, 0),
}


def is_supported(api_key: int, api_version: int) -> bool:
    entry = SUPPORTED.get(api_key)
    return entry is not None and entry[1] <= api_version <= entry[2]
