"""The assignment interval: a group's target assignment at most once per interval.

Kafka 4.4 computes a KIP-848 or share group's target assignment at most once per
``group.consumer.assignment.interval.ms`` / ``group.share.assignment.interval.ms`` (1 s), or
the group's own ``consumer.assignment.interval.ms`` / ``share.assignment.interval.ms``: a
member that joins sooner after the last target assignment takes that target's epoch (and
nothing), the group shows the new epoch ahead of the assignment's, and a heartbeat after the
interval assigns.  Each scenario starts its second member right after the group settled (the
heartbeat that computed the last target), or after more than the interval.
"""

from __future__ import annotations

import time
from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.scenarios_epochs import (
    INTERVAL_S,
    Consumer,
    _describe,
    _group,
    _settle,
    _share_settle,
    coordinator_sees,
    set_interval,
)
from tests.reference.differential.share import ShareMember, describe_group, share_group

CG = "consumer-groups"
SHARE = "share"


def _joined(resp: Any) -> dict[str, Any]:
    held = (
        0
        if resp.assignment is None
        else sum(len(tp.partitions) for tp in resp.assignment.topic_partitions)
    )
    return {"epoch": int(resp.member_epoch), "assigned": held}


# -- KIP-848 consumer groups -----------------------------------------------------------------


def _consumer_second_member(ctx: Ctx, pause_s: float, interval_ms: str | None = None) -> Any:
    t = ctx.create_topic("c", 4)
    coordinator_sees(ctx, t, 4)
    g = _group(ctx)
    altered = set_interval(ctx, g, "consumer.assignment.interval.ms", interval_ms)
    a = Consumer(ctx, g, [t])
    alone = _settle(ctx, g, [a], 4)
    time.sleep(pause_s)
    b = Consumer(ctx, g, [t])
    joined = _joined(b.heartbeat())
    right_after = _describe(ctx, g)
    return {
        "altered": altered,
        "alone": alone,
        "joined": joined,
        "right_after": right_after,
        "settled": _settle(ctx, g, [a, b], 4),
        "split": sorted([a.count(), b.count()]),
    }


@scenario(CG)
def interval_member_joins_within_it(ctx: Ctx) -> Any:
    return _consumer_second_member(ctx, 0)


@scenario(CG)
def interval_member_joins_after_it(ctx: Ctx) -> Any:
    return _consumer_second_member(ctx, INTERVAL_S)


@scenario(CG)
def interval_group_override_zero(ctx: Ctx) -> Any:
    return _consumer_second_member(ctx, 0, "0")


@scenario(CG)
def interval_group_override_longer(ctx: Ctx) -> Any:
    return _consumer_second_member(ctx, INTERVAL_S, "5000")


@scenario(CG)
def interval_two_members_join_together(ctx: Ctx) -> Any:
    t = ctx.create_topic("c", 4)
    coordinator_sees(ctx, t, 4)
    g = _group(ctx)
    a, b = Consumer(ctx, g, [t]), Consumer(ctx, g, [t])
    first, second = _joined(a.heartbeat()), _joined(b.heartbeat())
    return {
        "first": first,
        "second": second,
        "right_after": _describe(ctx, g),
        "settled": _settle(ctx, g, [a, b], 4),
    }


# -- share groups ----------------------------------------------------------------------------


def _share_second_member(ctx: Ctx, pause_s: float, interval_ms: str | None = None) -> Any:
    t = ctx.create_topic("s", 2)
    coordinator_sees(ctx, t, 2)
    g = share_group(ctx)
    altered = set_interval(ctx, g, "share.assignment.interval.ms", interval_ms)
    a = ShareMember(ctx, g, [t])
    alone = _share_settle(ctx, g, [a], 2)
    time.sleep(pause_s)
    b = ShareMember(ctx, g, [t])
    joined = _joined(b.heartbeat())
    right_after = describe_group(ctx, g)
    return {
        "altered": altered,
        "alone": alone,
        "joined": joined,
        "right_after": right_after,
        "settled": _share_settle(ctx, g, [a, b], 2),
    }


@scenario(SHARE)
def assignment_interval_member_joins_within_it(ctx: Ctx) -> Any:
    return _share_second_member(ctx, 0)


@scenario(SHARE)
def assignment_interval_member_joins_after_it(ctx: Ctx) -> Any:
    return _share_second_member(ctx, INTERVAL_S)


@scenario(SHARE)
def assignment_interval_group_override_zero(ctx: Ctx) -> Any:
    return _share_second_member(ctx, 0, "0")


@scenario(SHARE)
def assignment_interval_group_override_longer(ctx: Ctx) -> Any:
    return _share_second_member(ctx, INTERVAL_S, "5000")
