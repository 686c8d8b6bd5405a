"""Share sessions (KIP-932): the broker-side state behind ShareFetch/ShareAcknowledge epochs.

A share session belongs to one (group, member).  Epoch 0 opens it with the
request's partitions, each later request must carry the next epoch (and may
add or forget partitions), and epoch -1 closes it after its acknowledgements,
releasing the member's acquired records.  Sessions also close when their
connection closes.  ``group.share.max.share.sessions`` bounds the cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from txn.errors import ErrorCode
from txn.ids import TopicIdPartition
from txn.limits import next_share_session_epoch

INITIAL_EPOCH = 0
FINAL_EPOCH = -1


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    connection_id: int
    next_epoch: int = 1
    partitions: list[TopicIdPartition] = field(default_factory=list)
    rotation: int = 0  # where the next fetch starts, so no partition's backlog starves another

    def fetch_order(self) -> list[TopicIdPartition]:
        """The session's partitions, starting one further on each call (Kafka's rotation)."""
        parts = self.partitions
        if not parts:
            return []
        start = self.rotation % len(parts)
        self.rotation += 1
        return parts[start:] + parts[:start]

    def add(self, parts: list[TopicIdPartition]) -> None:
        for tp in parts:
            if tp not in self.partitions:
                self.partitions.append(tp)

    def forget(self, parts: list[TopicIdPartition]) -> None:
        gone = set(parts)
        self.partitions = [tp for tp in self.partitions if tp not in gone]


@dataclass(frozen=True, slots=True)
class SessionLookup:
    error: ErrorCode
    session: ShareSession | None = None
    replaced: ShareSession | None = None


class ShareSessionCache:
    """Sessions keyed by (group id, member id)."""

    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def open(self, group_id: str, member_id: str, connection_id: int) -> SessionLookup:
        """Epoch 0: a new session; an existing one for the member is replaced (and reported)."""
        key = (group_id, member_id)
        old = self._sessions.pop(key, None)
        if old is None and len(self._sessions) >= self.max_sessions:
            return SessionLookup(ErrorCode.SHARE_SESSION_LIMIT_REACHED)
        session = ShareSession(group_id, member_id, connection_id)
        self._sessions[key] = session
        return SessionLookup(ErrorCode.NONE, session, old)

    def check(self, group_id: str, member_id: str, epoch: int) -> SessionLookup:
        """A positive or final epoch: the session if it exists and the epoch is the expected one."""
        session = self._sessions.get((group_id, member_id))
        if session is None:
            return SessionLookup(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if epoch not in (FINAL_EPOCH, session.next_epoch):
            return SessionLookup(ErrorCode.INVALID_SHARE_SESSION_EPOCH, session)
        return SessionLookup(ErrorCode.NONE, session)

    def advance(self, session: ShareSession) -> None:
        session.next_epoch = next_share_session_epoch(session.next_epoch)

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)

    def close_connection(self, connection_id: int) -> list[ShareSession]:
        gone = [s for s in self._sessions.values() if s.connection_id == connection_id]
        for s in gone:
            del self._sessions[(s.group_id, s.member_id)]
        return gone

    def sessions_of_group(self, group_id: str) -> list[ShareSession]:
        return [s for s in self._sessions.values() if s.group_id == group_id]
