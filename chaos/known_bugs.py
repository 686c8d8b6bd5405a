"""Product bugs the simulation found, with stand-ins for their fixes.

Each entry names a bug in the broker, how to reproduce it, and an *assumed fix*: a
run-time patch (``chaos.patching``) that behaves as the fix would, so that the rest of the
protocol stays under test (``sharetxn chaos run --assume-fixed``; the CI batch applies them)
until the product is fixed.  When a fix lands, its entry must go: the strict xfails
``test_known_bug_reproduces`` and ``tests/chaos/test_known_bugs.py`` then XPASS and say so.

* **B1 -- TxnShareAcknowledge below the SPSO is accepted and ignored.**
  ``SharePartition._plan_acks`` skips batches below the share-partition start offset ("Kafka
  ignores it"), which is right for a plain ShareAcknowledge but wrong for a transactional one:
  the request answers NONE, nothing is staged, and the client commits its outputs although
  another member had already acknowledged those records.  Reached when a member's records are
  redelivered to someone else while it works on them -- its lock expired (a pause, a jump of
  the clock) or the broker restarted (acquisitions are not persisted) -- and the other
  member's commit moved the SPSO past them.  Breaks exactly-once (I4 duplicates); the checker
  sees it directly as an answer NONE whose records did not become TX_PENDING (I15).  DESIGN §4.2
  says every record must be ACQUIRED by that member, else INVALID_RECORD_STATE.
  Reproduction: ``sharetxn chaos replay 1 --ops 2000 --assume-fixed B2`` (at the harness
  commit that added this entry); on the core alone: ``tests/chaos/test_known_bugs.py``.

* **B2 -- pruning loses committed transactional acknowledgements.**
  A COMMIT marker materializes the staged acks only in memory; the log holds them as the
  pending transactional batch plus the marker.  ``prune()`` keeps the log from the first
  offset of *open* transactions only, so once the transaction is committed it may advance to
  the key's latest ShareSnapshot -- one written while the transaction was still open, which
  does not contain the staged acks -- dropping the pending batch but not the marker.  After a
  restart the replayed marker finds nothing staged and the acknowledged records are delivered
  again (I1, I4).  A fix: snapshot the keys a commit materialized (or keep pruning below the
  committed batch until such a snapshot exists).
  Reproduction: ``sharetxn chaos replay 17 --ops 2000 --assume-fixed B1``; on the core alone:
  ``tests/chaos/test_known_bugs.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from chaos.patching import Patch, replace
from coordinator.share.share_coordinator import ShareCoordinator
from coordinator.share.share_partition import AckBatch, SharePartition
from txn.errors import ErrorCode
from txn.share_records import ShareSnapshotValue


def _fix_b1(stack: ExitStack) -> None:
    original = SharePartition.pending_plan

    def pending_plan(
        self: SharePartition,
        member_id: str | None,
        producer_id: int,
        producer_epoch: int,
        batches: Sequence[AckBatch],
    ) -> Any:
        # A transactional acknowledgement of a record below the SPSO cannot be staged: the
        # record was acknowledged already (by someone), so it is not ACQUIRED by this member.
        if any(b.first_offset < self.start_offset for b in batches):
            return ErrorCode.INVALID_RECORD_STATE
        return original(self, member_id, producer_id, producer_epoch, batches)

    replace(stack, SharePartition, "pending_plan", pending_plan)


_FLOORS = "_chaos_commit_floors"


def _fix_b2(stack: ExitStack) -> None:
    apply_marker = ShareCoordinator._apply_marker  # noqa: SLF001
    apply_record = ShareCoordinator._apply  # noqa: SLF001

    def floors(coordinator: ShareCoordinator) -> dict[tuple[int, Any], int]:
        found: dict[tuple[int, Any], int] | None = coordinator.__dict__.get(_FLOORS)
        if found is None:
            found = {}
            coordinator.__dict__[_FLOORS] = found
        return found

    def _apply_marker(
        self: ShareCoordinator, part: Any, producer_id: int, producer_epoch: int, commit: bool
    ) -> list[Any]:
        pending = part.pending_txn.get(producer_id)
        first = None
        if pending is not None and pending.producer_epoch <= producer_epoch:
            first = pending.first_offset
        keys: list[Any] = apply_marker(self, part, producer_id, producer_epoch, commit)
        if commit and first is not None:
            held = floors(self)
            for key in keys:
                slot = (part.index, key)
                held[slot] = min(held.get(slot, first), first)
        return keys

    def _apply(self: ShareCoordinator, part: Any, offset: int, key: Any, value: Any) -> None:
        apply_record(self, part, offset, key, value)
        if isinstance(value, ShareSnapshotValue):
            floors(self).pop((part.index, key), None)  # the snapshot holds the committed acks

    def pruned(self: ShareCoordinator) -> dict[int, int]:
        # The product's prune(), except that no partition is pruned past a committed batch no
        # snapshot covers yet.
        if self.availability() is not ErrorCode.NONE:
            return {}
        limits: dict[int, int] = {}
        for (index, _key), first in floors(self).items():
            limits[index] = min(limits.get(index, first), first)
        moved: dict[int, int] = {}
        for index, part in sorted(self._partitions.items()):
            target = int(ShareCoordinator._first_needed_offset(part))  # noqa: SLF001
            target = min(target, limits.get(index, target))
            if target <= part.log.log_start_offset:
                continue
            part.log.advance_start_offset(target)
            moved[index] = target
        return moved

    replace(stack, ShareCoordinator, "_apply_marker", _apply_marker)
    replace(stack, ShareCoordinator, "_apply", _apply)
    replace(stack, ShareCoordinator, "prune", pruned)


KNOWN_BUGS: dict[str, Patch] = {
    "B1": Patch(
        "B1",
        "TxnShareAcknowledge of records below the SPSO answers NONE and stages nothing",
        _fix_b1,
        ("I15", "I4"),
    ),
    "B2": Patch(
        "B2",
        "pruning after a commit drops the pending batch, so a restart loses the committed acks",
        _fix_b2,
        ("I1", "I4"),
    ),
}


def assumed_fixes(names: Sequence[str] | None = None) -> list[Patch]:
    """The assumed fixes of ``names`` (all known bugs if None)."""
    if names is None:
        return list(KNOWN_BUGS.values())
    unknown = [n for n in names if n not in KNOWN_BUGS]
    if unknown:
        raise ValueError(f"unknown bug(s) {', '.join(unknown)}; known: {', '.join(KNOWN_BUGS)}")
    return [KNOWN_BUGS[n] for n in names]
