"""Request API keys: Apache Kafka's numbers and names, and sharetxn's own three.

This is the one home of every API key number.  Broker tables (supported versions, ACL
rules, handlers) and client requests name a key as an ``ApiKey`` member, never as a number.

Kafka's keys follow its ``ApiKeys`` (the requests kio's schema index holds; the pre-KRaft
inter-broker requests 4-7 are gone since Kafka 4.0).  ``api_name`` is Kafka's name of the
request (``ApiKey.TXN_OFFSET_COMMIT.api_name == "TxnOffsetCommit"``).

1289-1291 are sharetxn's (DESIGN §3): KIP-1289's TxnShareAcknowledge and AddShareAcksToTxn,
and DescribeSharePendingAcks, sharetxn's admin API for the recovery tool.  The KIP leaves
their keys open and Apache Kafka 4.4 took 93 and 94 (StreamsGroupTopologyDescriptionUpdate,
UnregisterController), so ours sit far from Kafka's sequence, where no Kafka key means
anything else; they move to the KIP's keys if it is accepted with some.  A client still
tells a KIP-1289 broker by its finalized feature (``txn.kip1289_schema.KIP1289_FEATURE``).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final


class ApiKey(IntEnum):
    """A request's API key, with Kafka's number (sharetxn's own for KIP-1289)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    STREAMS_GROUP_HEARTBEAT = 88
    STREAMS_GROUP_DESCRIBE = 89
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92
    # sharetxn's own (DESIGN §3): far from Kafka's sequence, named after the KIP
    TXN_SHARE_ACKNOWLEDGE = 1289  # KIP-1289
    ADD_SHARE_ACKS_TO_TXN = 1290  # KIP-1289
    DESCRIBE_SHARE_PENDING_ACKS = 1291  # sharetxn admin API (recovery tool), not in any KIP

    @property
    def api_name(self) -> str:
        """Kafka's name of the request, e.g. ``"AddPartitionsToTxn"``."""
        return "".join(word.capitalize() for word in self.name.split("_"))


#: The APIs no Kafka release has: served only by a KIP-1289 (sharetxn) broker.
KIP1289_APIS: Final = frozenset(
    {ApiKey.TXN_SHARE_ACKNOWLEDGE, ApiKey.ADD_SHARE_ACKS_TO_TXN, ApiKey.DESCRIBE_SHARE_PENDING_ACKS}
)
