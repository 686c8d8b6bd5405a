"""The persister seam between share partitions and the share coordinator.

A share partition reads its durable state when it initializes and writes
every state change before it answers the client (KIP-932's persister).  On
this single node the share coordinator implements the protocol directly; the
calls mirror the ReadShareGroupState / WriteShareGroupState /
InitializeShareGroupState / DeleteShareGroupState /
ReadShareGroupStateSummary RPCs, one key (group, topic id, partition) each.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from txn.errors import ErrorCode


class ShareStateKey(NamedTuple):
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class PersisterStateBatch:
    """An inclusive offset range with one delivery state and count (StateBatches[])."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class StateWrite:
    """What a WriteShareGroupState carries for one key (start offset -1 = unchanged).

    ``delivery_complete_count`` (v1, KIP-1226): the records at or above ``start_offset`` whose
    delivery is complete, -1 if unknown.  ``reset_offset`` is this broker's own: the position
    ``share.auto.offset.reset`` chose, recorded while the start offset is still -1 (-1: none).
    """

    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: Sequence[PersisterStateBatch]
    delivery_complete_count: int = -1
    reset_offset: int = -1


@dataclass(frozen=True, slots=True)
class ReadStateResult:
    error: ErrorCode
    state_epoch: int = -1
    start_offset: int = -1
    batches: tuple[PersisterStateBatch, ...] = ()
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class StateSummary:
    error: ErrorCode
    state_epoch: int = -1
    leader_epoch: int = -1
    start_offset: int = -1
    delivery_complete_count: int = -1
    error_message: str | None = None


class Persister(Protocol):
    def initialize_state(
        self, key: ShareStateKey, state_epoch: int, start_offset: int
    ) -> ErrorCode:
        """InitializeShareGroupState: a fresh snapshot (start offset -1 = use auto.offset.reset)."""
        ...

    def read_state(self, key: ShareStateKey, leader_epoch: int) -> ReadStateResult:
        """ReadShareGroupState."""
        ...

    def write_state(self, key: ShareStateKey, write: StateWrite) -> ErrorCode:
        """WriteShareGroupState: durable before it returns NONE."""
        ...

    def delete_state(self, key: ShareStateKey) -> ErrorCode:
        """DeleteShareGroupState (a missing key is success)."""
        ...

    def read_state_summary(self, key: ShareStateKey, leader_epoch: int) -> StateSummary:
        """ReadShareGroupStateSummary."""
        ...
