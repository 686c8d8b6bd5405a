"""Product bugs the simulation found: the open ones (with stand-ins for their fixes), and a record.

When the simulation finds a bug in the broker, it gets an entry in ``KNOWN_BUGS`` with an
*assumed fix*: a run-time patch (``chaos.patching``) that behaves as the fix would, so the rest
of the protocol stays under test (``sharetxn chaos run --assume-fixed B3``; the CI batch and the
mutation runs apply every open entry) until the product is fixed.  Give it a strict-xfail
reproduction in ``tests/chaos/test_known_bugs.py``; when the fix lands, that test XPASSes: make
it a regression test and move the entry to ``FIXED``.

Open bugs: none.

Fixed (found by this simulation; B1 and B2 fixed in commit 0f16192; regression tests in
``tests/chaos/test_known_bugs.py``):

* **B1 -- TxnShareAcknowledge below the SPSO was accepted and ignored.**
  ``SharePartition._plan_acks`` skipped batches below the share-partition start offset, which is
  right for a plain ShareAcknowledge but not for a transactional one: the request answered
  NONE, nothing was staged, and the client committed its outputs although another member had
  already acknowledged those records.  Reached when a member's records are redelivered to
  someone else while it works on them -- its lock expired (a pause, a jump of the clock) or the
  broker restarted (acquisitions are not persisted) -- and the other member's commit moved the
  SPSO past them.  Broke exactly-once (I4); the checker also sees it directly as an answer NONE
  whose records did not become TX_PENDING (I15).  Seed 1 (2,000 operations) at commit 121e429.

* **B2 -- pruning lost committed transactional acknowledgements.**
  A COMMIT marker materialized the staged acks only in memory; the log held them as the pending
  transactional batch plus the marker.  ``prune()`` kept the log from the first offset of *open*
  transactions only, so once a transaction committed it could advance to the key's latest
  ShareSnapshot -- written while the transaction was open, without the staged acks -- dropping
  the pending batch but not the marker.  After a restart the replayed marker found nothing
  staged and the acknowledged records were delivered again (I1, I4).  Seed 17 (2,000
  operations, B1 patched out) at commit 121e429.

* **B3 -- a share partition whose initialization failed stayed failed.**
  ``ShareManager.share_partition`` kept a ``SharePartition`` in the FAILED state in its cache,
  and a FAILED partition is never re-initialized, so every later ShareFetch of that partition
  answered UNKNOWN_SERVER_ERROR until the broker restarted (Kafka's SharePartitionManager drops
  a partition whose initialization failed, and the next request creates a fresh one).  Reached
  when the state write of a fresh partition's initialization hits an I/O error; its records
  were never consumed (I13).  Seed 144 (2,000 operations) once the marker channel's stale
  copies joined the swarm; fixed with the harness change that found it.

* **B4 -- a join could be answered without its assignment.**
  ``ShareManager.heartbeat`` heartbeats a second time when initializing share state made
  partitions assignable, and answered with that second result; the second pass sends the
  assignment only if it changed since the first, so when a retried initialization (the first
  one had hit an I/O error) ran during a join that already got its partitions, the join was
  answered with none.  The member, told nothing, never fetched the partition the broker held
  it to, and its records were never consumed (I13).  Seed 30128 of 50 operations.
"""

from __future__ import annotations

from collections.abc import Sequence

from chaos.patching import Patch

KNOWN_BUGS: dict[str, Patch] = {}

FIXED: dict[str, str] = {
    "B1": "TxnShareAcknowledge of records below the SPSO answered NONE and staged nothing",
    "B2": "pruning after a commit dropped the pending batch, so a restart lost committed acks",
    "B3": "a share partition whose initialization failed (I/O error) was never retried",
    "B4": "a join answered after a retried share-state initialization lost its assignment",
}


def assumed_fixes(names: Sequence[str] | None = None) -> list[Patch]:
    """The assumed fixes of ``names`` (all open bugs if None)."""
    if names is None:
        return list(KNOWN_BUGS.values())
    unknown = [n for n in names if n not in KNOWN_BUGS]
    if unknown:
        fixed = [n for n in unknown if n in FIXED]
        if fixed:
            raise ValueError(f"{', '.join(fixed)} fixed in the product: nothing to assume")
        raise ValueError(
            f"unknown bug(s) {', '.join(unknown)}; open: {', '.join(KNOWN_BUGS) or 'none'}"
        )
    return [KNOWN_BUGS[n] for n in names]
