"""What the consumer-group coordinator takes and answers: requests, results, descriptions."""

from __future__ import annotations

from dataclasses import dataclass

from txn.errors import ErrorCode

NO_GENERATION = -1
GROUP_TYPE = "classic"


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str
    client_host: str
    require_known_member_id: bool  # JoinGroup v4+
    reason: str | None = None  # JoinGroup v8+: the client's own words, logged (KIP-800)
    skip_assignment_supported: bool = False  # JoinGroup v9+ (KIP-814)


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation: int = NO_GENERATION
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # for the leader only
    skip_assignment: bool = False  # a leader that rejoined without a rebalance (KIP-814)


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol: str | None = None


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    state: str
    protocol_type: str
    group_type: str = GROUP_TYPE


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None
    error: ErrorCode
