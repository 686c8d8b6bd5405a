"""The share-group SimpleAssignor (KIP-932): every member gets partitions, partitions are shared.

Share groups have no exclusive ownership, so the assignor may give one partition to several
members.  It follows Kafka's ``SimpleAssignor`` rules:

* **Desired sharing.**  With M members and P assignable partitions each partition should be
  held by ``ceil(M / P)`` members: exactly one when ``M <= P``, more once members outnumber
  partitions, so no member is ever left idle while partitions exist.
* **Balance before stickiness.**  The ``sharing * P`` assignment slots are spread over the
  members so that any two member counts differ by at most one.  Only within that bound does the
  previous (target) assignment survive.
* **Steps** (reference §5): revoke partitions that are no longer subscribed or assignable,
  revoke holders of over-shared partitions, revoke partitions from members above their quota,
  then assign what is left.

Where all members subscribe to the same topics, balance is over the union of their partitions.
Otherwise it is computed topic by topic among that topic's subscribers and combined (as Kafka's
heterogeneous builder does), so a member's total may differ from another's by more than one.

Everything here is deterministic (ties break on member id and partition order) and pure: the
caller persists the result, so a replay never re-runs the assignor.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from txn.ids import TopicIdPartition

Assignment = frozenset[TopicIdPartition]


class SimpleAssignor:
    """Kafka's built-in share-group assignor (``group.share.assignors=simple``)."""

    name = "simple"

    def assign(
        self,
        subscriptions: Mapping[str, Iterable[uuid.UUID]],
        assignable: Mapping[uuid.UUID, Iterable[int]],
        current: Mapping[str, Iterable[TopicIdPartition]],
    ) -> dict[str, Assignment]:
        """The new target assignment of every member in ``subscriptions``.

        ``subscriptions`` maps each member to the ids of the topics it subscribes to;
        ``assignable`` lists, per topic id, the partitions whose share state is initialized
        (others are never assigned); ``current`` is the previous target assignment.
        """
        members = sorted(subscriptions)
        if not members:
            return {}
        topics_of = {m: frozenset(subscriptions[m]) for m in members}
        pools = {
            topic_id: sorted(TopicIdPartition(topic_id, p) for p in set(partitions))
            for topic_id, partitions in assignable.items()
        }
        previous = {m: set(current.get(m, ())) for m in members}
        result: dict[str, set[TopicIdPartition]] = {m: set() for m in members}
        if len(set(topics_of.values())) == 1:
            subscribed = topics_of[members[0]]
            pool = [tp for topic_id in sorted(subscribed) for tp in pools.get(topic_id, [])]
            result = _balance(pool, members, previous, {m: 0 for m in members})
        else:
            totals = {m: 0 for m in members}
            for topic_id in sorted(set().union(*topics_of.values())):
                subscribers = [m for m in members if topic_id in topics_of[m]]
                pool = pools.get(topic_id, [])
                share = _balance(pool, subscribers, previous, totals)
                for member, partitions in share.items():
                    result[member] |= partitions
                    totals[member] += len(partitions)
        return {m: frozenset(result[m]) for m in members}


def _balance(
    pool: list[TopicIdPartition],
    members: list[str],
    previous: Mapping[str, set[TopicIdPartition]],
    load: Mapping[str, int],
) -> dict[str, set[TopicIdPartition]]:
    """Share ``pool`` among ``members``: balanced counts, desired sharing, sticky otherwise.

    ``load`` is what each member already received from other topics; it only breaks ties when
    handing out the one-larger quotas, so per-topic balancing does not favour the same member
    on every topic.
    """
    held: dict[str, set[TopicIdPartition]] = {m: set() for m in members}
    if not pool or not members:
        return held
    sharing = -(-len(members) // len(pool))  # ceil(M / P)
    base, extra = divmod(sharing * len(pool), len(members))

    # Step 1: keep only partitions that are still subscribed and assignable.
    in_pool = set(pool)
    for member in members:
        held[member] = previous.get(member, set()) & in_pool

    # The quotas: counts differ by at most one; the larger ones go to the members that already
    # hold the most (fewest moves), then to the least loaded, then by id.
    by_claim = sorted(members, key=lambda m: (-len(held[m]), load.get(m, 0), m))
    quota = {m: base + (1 if rank < extra else 0) for rank, m in enumerate(by_claim)}
    holders: dict[TopicIdPartition, set[str]] = {tp: set() for tp in pool}
    for member in members:
        for tp in held[member]:
            holders[tp].add(member)

    # Step 2: revoke over-shared partitions, from the members furthest above their quota.
    for tp in pool:
        while len(holders[tp]) > sharing:
            victim = max(holders[tp], key=lambda m: (len(held[m]) - quota[m], m))
            holders[tp].discard(victim)
            held[victim].discard(tp)

    # Step 3: revoke from members above their quota, most-shared partitions first.
    for member in members:
        excess = len(held[member]) - quota[member]
        if excess > 0:
            ranked = sorted(held[member], key=lambda tp: (-len(holders[tp]), tp))
            for tp in ranked[:excess]:
                held[member].discard(tp)
                holders[tp].discard(member)

    # Step 4: assign the remaining slots.  Slots and quotas add up to the same total, so while
    # a partition lacks holders some member lacks partitions.
    while True:
        short = sorted(
            (tp for tp in pool if len(holders[tp]) < sharing), key=lambda t: (len(holders[t]), t)
        )
        if not short:
            break
        progressed = False
        for tp in short:
            while len(holders[tp]) < sharing:
                candidates = [
                    m for m in members if len(held[m]) < quota[m] and m not in holders[tp]
                ]
                if not candidates:
                    break
                chosen = min(candidates, key=lambda m: (len(held[m]) - quota[m], m))
                held[chosen].add(tp)
                holders[tp].add(chosen)
                progressed = True
        if not progressed:
            open_members = [m for m in members if len(held[m]) < quota[m]]
            if not open_members:  # pragma: no cover - impossible by the counting argument above
                raise AssertionError("share assignor: free slots but no member below its quota")
            _swap_into(short[0], open_members[0], pool, held, holders)
    return held


def _swap_into(
    tp: TopicIdPartition,
    taker: str,
    pool: list[TopicIdPartition],
    held: dict[str, set[TopicIdPartition]],
    holders: dict[TopicIdPartition, set[str]],
) -> None:
    """Give ``tp`` a holder when every member with room already holds it.

    ``taker`` has room but holds ``tp``; some full partition ``y`` that ``taker`` lacks has a
    holder ``b`` without ``tp`` (``tp`` has fewer than ``sharing`` holders, ``y`` has
    ``sharing``).  Move ``y`` from ``b`` to ``taker`` and give ``tp`` to ``b``: counts stay
    balanced and ``tp`` gains a holder.
    """
    for other in pool:
        if other in held[taker]:
            continue
        for giver in sorted(holders[other]):
            if tp not in held[giver]:
                held[giver].discard(other)
                holders[other].discard(giver)
                held[taker].add(other)
                holders[other].add(taker)
                held[giver].add(tp)
                holders[tp].add(giver)
                return
    raise AssertionError(f"share assignor: no swap gives {tp} another holder")  # pragma: no cover
