"""A member of a classic group (JoinGroup/SyncGroup/Heartbeat/LeaveGroup), as Connect's
``WorkerGroupMember``: protocol type ``connect``, the leader computes every assignment.

``join`` runs one rebalance: JoinGroup (again with the member id the coordinator hands out
when it answers MEMBER_ID_REQUIRED, KIP-394), the leader's ``assign`` over the members'
metadata, SyncGroup; it returns this member's assignment.  ``heartbeat`` says whether the
member must join again (a rebalance began, or it was fenced out of the group).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from producer.protocol.client import KafkaClient
from txn.api_keys import ApiKey
from txn.errors import ErrorCode, KafkaProtocolError, RetriableError, error_for_code
from txn.ids import KEY_TYPE_GROUP

__all__ = ["GroupMember", "Joined"]

log = logging.getLogger("producer.sink")

_COORDINATOR = frozenset(
    {
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)
_REJOIN = frozenset(
    {
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.FENCED_INSTANCE_ID,
    }
)
_JOIN_VERSION = 7
_SYNC_VERSION = 5
_HEARTBEAT_VERSION = 4
_LEAVE_VERSION = 4


@dataclass(frozen=True, slots=True)
class Joined:
    generation: int
    member_id: str
    leader_id: str
    assignment: bytes
    protocol: str = ""


class GroupMember:
    """One worker in a ``connect`` group (see the module docstring)."""

    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        *,
        protocol_type: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
    ) -> None:
        self.group_id = group_id
        self.protocol_type = protocol_type
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.member_id = ""
        self.generation = -1
        self._client = KafkaClient(
            bootstrap,
            client_id=client_id,
            request_timeout_ms=rebalance_timeout_ms + 5000,
        )
        self._lock = threading.Lock()

    def _send(self, api_key: ApiKey, body: dict[str, Any], version: int) -> Any:
        def once() -> Any:
            node = self._client.coordinator_for(KEY_TYPE_GROUP, self.group_id)
            try:
                resp = self._client.send(
                    node, api_key, body, min_version=version, max_version=version
                )
            except RetriableError:
                self._client.forget_coordinator(KEY_TYPE_GROUP, self.group_id)
                raise
            if ErrorCode(int(resp.error_code)) in _COORDINATOR:
                self._client.forget_coordinator(KEY_TYPE_GROUP, self.group_id)
                raise error_for_code(int(resp.error_code))("coordinator moved")
            return resp

        with self._lock:
            return self._client.call(once)

    def join(
        self,
        protocols: list[tuple[str, bytes]],
        assign: Callable[[str, dict[str, bytes]], dict[str, bytes]],
    ) -> Joined:
        """One rebalance; ``assign(protocol, {member: metadata})`` runs on the leader."""
        while True:
            resp = self._send(
                ApiKey.JOIN_GROUP,
                {
                    "group_id": self.group_id,
                    "session_timeout": self.session_timeout_ms,
                    "rebalance_timeout": self.rebalance_timeout_ms,
                    "member_id": self.member_id,
                    "group_instance_id": None,
                    "protocol_type": self.protocol_type,
                    "protocols": [{"name": n, "metadata": m} for n, m in protocols],
                },
                _JOIN_VERSION,
            )
            code = ErrorCode(int(resp.error_code))
            if code is ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = str(resp.member_id)
                continue
            if code is ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
                continue
            if code is ErrorCode.REBALANCE_IN_PROGRESS:
                continue
            if code is not ErrorCode.NONE:
                raise error_for_code(int(code))(f"JoinGroup of {self.group_id}: {code.name}")
            self.member_id = str(resp.member_id)
            self.generation = int(resp.generation_id)
            leader = str(resp.leader)
            assignments: dict[str, bytes] = {}
            if leader == self.member_id:
                members = {str(m.member_id): bytes(m.metadata) for m in resp.members}
                assignments = assign(str(resp.protocol_name), members)
            sync = self._send(
                ApiKey.SYNC_GROUP,
                {
                    "group_id": self.group_id,
                    "generation_id": self.generation,
                    "member_id": self.member_id,
                    "group_instance_id": None,
                    "protocol_type": self.protocol_type,
                    "protocol_name": resp.protocol_name,
                    "assignments": [
                        {"member_id": m, "assignment": a} for m, a in sorted(assignments.items())
                    ],
                },
                _SYNC_VERSION,
            )
            code = ErrorCode(int(sync.error_code))
            if code in _REJOIN:
                if code is ErrorCode.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                continue
            if code is not ErrorCode.NONE:
                raise error_for_code(int(code))(f"SyncGroup of {self.group_id}: {code.name}")
            return Joined(
                self.generation,
                self.member_id,
                leader,
                bytes(sync.assignment),
                str(resp.protocol_name or ""),
            )

    def heartbeat(self) -> bool:
        """True while the member is in the current generation; False: join again."""
        try:
            resp = self._send(
                ApiKey.HEARTBEAT,
                {
                    "group_id": self.group_id,
                    "generation_id": self.generation,
                    "member_id": self.member_id,
                    "group_instance_id": None,
                },
                _HEARTBEAT_VERSION,
            )
        except (RetriableError, KafkaProtocolError) as exc:
            log.debug("group %s: heartbeat failed: %s", self.group_id, exc)
            return True
        code = ErrorCode(int(resp.error_code))
        if code is ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
        return code not in _REJOIN

    def leave(self) -> None:
        if not self.member_id:
            return
        try:
            self._send(
                ApiKey.LEAVE_GROUP,
                {
                    "group_id": self.group_id,
                    "members": [{"member_id": self.member_id, "group_instance_id": None}],
                },
                _LEAVE_VERSION,
            )
        except (RetriableError, KafkaProtocolError) as exc:
            log.debug("group %s: LeaveGroup failed: %s", self.group_id, exc)
        self.member_id = ""

    def close(self) -> None:
        self._client.close()
