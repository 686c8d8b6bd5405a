"""Group epochs of KIP-848 consumer groups and share groups as topics change under them.

Kafka 4.4 starts a group at epoch 1, bumps it when a member joins, leaves or changes its
subscription, when the subscribed topics' metadata changes (a topic created, grown or
deleted: its next heartbeat after the refresh) and, for a share group, once newly
initialized share partitions can be assigned.  It computes the target assignment at most
once per ``group.*.assignment.interval.ms`` (1 s), so the epochs members hold in between
depend on timing: each scenario records the epochs once the group has settled (every
member at the target's epoch, holding what the target gives it).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from tests.reference.differential.ctx import GROUP_RESOURCE, Ctx, client_uuid, member_fields
from tests.reference.differential.framework import scenario
from tests.reference.differential.scenarios_config_describe import once_applied
from tests.reference.differential.share import ShareMember, describe_group, share_group
from tests.reference.differential.wire import plain

SETTLE_S = 20.0
INTERVAL_S = 1.5  # more than Kafka's default group.share.assignment.interval.ms (1 s)
ASSIGNMENT_INTERVAL = "share.assignment.interval.ms"


class Consumer:
    """A KIP-848 member subscribed to several topics, reporting what it owns by topic id."""

    def __init__(self, ctx: Ctx, group: str, topics: Sequence[str]) -> None:
        self.ctx, self.group, self.topics = ctx, group, list(topics)
        self.member_id = client_uuid()
        self.epoch = 0
        self.owned: dict[uuid.UUID, list[int]] = {}

    def heartbeat(self) -> Any:
        resp = self.ctx.call(
            68,
            {
                **member_fields(self.group, self.member_id, self.epoch),
                "instance_id": None,
                "rack_id": None,
                "rebalance_timeout": 30000,
                "subscribed_topic_names": self.topics,
                "subscribed_topic_regex": None,
                "server_assignor": None,
                "topic_partitions": [
                    {"topic_id": t, "partitions": ps} for t, ps in sorted(self.owned.items())
                ],
            },
        )
        if int(resp.error_code) != 0:
            msg = f"heartbeat failed: {plain(resp.error_code, 'error_code')}"
            raise RuntimeError(msg)
        self.epoch = int(resp.member_epoch)
        if resp.assignment is not None:
            self.owned = {
                tp.topic_id: sorted(int(p) for p in tp.partitions)
                for tp in resp.assignment.topic_partitions
            }
        return resp

    def count(self) -> int:
        return sum(len(ps) for ps in self.owned.values())


def coordinator_sees(ctx: Ctx, topic: str, partitions: int) -> None:
    """Until a throwaway KIP-848 member is assigned ``topic``'s partitions, then it leaves.

    Kafka's group coordinators learn of a new topic from the metadata image after its
    Metadata answers list it; on a fresh broker that can take long enough for a member
    joining at once to be assigned nothing and its group to bump again when the image
    arrives.  Scenarios about epochs wait for the coordinator first."""
    probe = Consumer(ctx, ctx.name(f"probe-{topic}"), [topic])
    deadline = time.monotonic() + SETTLE_S
    while probe.count() < partitions and time.monotonic() < deadline:
        probe.heartbeat()
        time.sleep(0.05)
    probe.epoch = -1
    probe.heartbeat()


def _group(ctx: Ctx) -> str:
    g = ctx.name("cg")
    ctx.find_coordinator(g, 0)
    return g


def _describe(ctx: Ctx, g: str) -> dict[str, Any]:
    d = ctx.describe_group(69, g)
    return {
        "error": plain(d.error_code, "error_code"),
        "state": d.group_state,
        "epoch": int(d.group_epoch),
        "assignment_epoch": int(d.assignment_epoch),
        "members": sorted(
            [
                int(m.member_epoch),
                sum(len(tp.partitions) for tp in m.assignment.topic_partitions),
            ]
            for m in d.members
        ),
    }


def _settle(ctx: Ctx, g: str, members: Sequence[Consumer], total: int) -> dict[str, Any]:
    """Heartbeat every member until the group is Stable at its target's epoch with
    ``total`` partitions held; the group's description then."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        for m in members:
            m.heartbeat()
        d = _describe(ctx, g)
        settled = (
            d["state"] == "Stable"
            and d["epoch"] == d["assignment_epoch"]
            and all(e == d["epoch"] for e, _ in d["members"])
            and sum(m.count() for m in members) == total
        )
        if settled or time.monotonic() > deadline:
            return d
        time.sleep(0.2)


def _create_partitions(ctx: Ctx, topic: str, count: int) -> str:
    resp = ctx.call(
        37,
        {
            "topics": [{"name": topic, "count": count, "assignments": None}],
            "timeout": 30000,
            "validate_only": False,
        },
    )
    err = str(plain(resp.results[0].error_code, "error_code"))
    ctx.wait_topic(topic, count)
    return err


def _delete_topic(ctx: Ctx, topic: str) -> str:
    resp = ctx.call(
        20, {"topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}], "timeout": 10000}
    )
    deadline = time.monotonic() + 10
    while int(ctx.metadata([topic]).topics[0].error_code) == 0:
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return str(plain(resp.responses[0].error_code, "error_code"))


# -- KIP-848 consumer groups -----------------------------------------------------------------

CG = "consumer-groups"


@scenario(CG)
def epoch_topic_created_after_subscribing(ctx: Ctx) -> Any:
    t = ctx.name("later")
    g = _group(ctx)
    m = Consumer(ctx, g, [t])
    first = m.heartbeat()
    before = {"epoch": int(first.member_epoch), "owned": m.count()}
    ctx.create_topic_raw(t, 2)
    ctx.wait_topic(t, 2)
    return {"before": before, "after": _settle(ctx, g, [m], 2)}


@scenario(CG)
def epoch_partitions_added(ctx: Ctx) -> Any:
    t = ctx.create_topic("c", 2)
    coordinator_sees(ctx, t, 2)
    g = _group(ctx)
    m = Consumer(ctx, g, [t])
    before = _settle(ctx, g, [m], 2)
    grown = _create_partitions(ctx, t, 4)
    return {"before": before, "grown": grown, "after": _settle(ctx, g, [m], 4)}


@scenario(CG)
def epoch_topic_deleted(ctx: Ctx) -> Any:
    kept, gone = ctx.create_topic("c", 1), ctx.create_topic("d", 2)
    coordinator_sees(ctx, gone, 2)
    g = _group(ctx)
    m = Consumer(ctx, g, [kept, gone])
    before = _settle(ctx, g, [m], 3)
    deleted = _delete_topic(ctx, gone)
    m.owned.pop(ctx.topic_id(gone), None)  # as a client does once the topic is gone
    return {"before": before, "deleted": deleted, "after": _settle(ctx, g, [m], 1)}


@scenario(CG)
def epoch_two_members(ctx: Ctx) -> Any:
    t = ctx.create_topic("c", 4)
    coordinator_sees(ctx, t, 4)
    g = _group(ctx)
    a = Consumer(ctx, g, [t])
    alone = _settle(ctx, g, [a], 4)
    b = Consumer(ctx, g, [t])
    both = _settle(ctx, g, [a, b], 4)
    return {"alone": alone, "both": both, "split": sorted([a.count(), b.count()])}


@scenario(CG)
def epoch_member_leaves_and_subscription_changes(ctx: Ctx) -> Any:
    t, u = ctx.create_topic("c", 2), ctx.create_topic("u", 1)
    coordinator_sees(ctx, u, 1)
    g = _group(ctx)
    a, b = Consumer(ctx, g, [t]), Consumer(ctx, g, [t])
    both = _settle(ctx, g, [a, b], 2)
    b.topics = [t, u]
    widened = _settle(ctx, g, [a, b], 3)
    a.epoch = -1
    a.heartbeat()
    return {"both": both, "widened": widened, "after_leave": _settle(ctx, g, [b], 3)}


# -- share groups ----------------------------------------------------------------------------

SHARE = "share"


def _share_settle(ctx: Ctx, g: str, members: Sequence[ShareMember], total: int) -> dict[str, Any]:
    """Heartbeat every member until the group's epoch is its assignment epoch, every member
    is at it and ``total`` partitions are assigned; the group's description then."""
    deadline = time.monotonic() + SETTLE_S
    held: dict[str, int] = {}
    while True:
        for m in members:
            resp = m.heartbeat()
            if resp.assignment is not None:
                held[m.member_id] = sum(
                    len(tp.partitions) for tp in resp.assignment.topic_partitions
                )
        d = describe_group(ctx, g)
        member_epochs = {int(x.member_epoch) for x in ctx.describe_group(77, g).members}
        settled = (
            d["group_epoch"] == d["assignment_epoch"]
            and member_epochs == {d["group_epoch"]}
            and sum(held.get(m.member_id, 0) for m in members) == total
        )
        if settled or time.monotonic() > deadline:
            return {**d, "assigned": sorted(held.get(m.member_id, 0) for m in members)}
        time.sleep(0.2)


@scenario(SHARE)
def epoch_initializes_several_topics(ctx: Ctx) -> Any:
    t, u = ctx.create_topic("s", 3), ctx.create_topic("u", 2)
    coordinator_sees(ctx, u, 2)
    g = share_group(ctx)
    m = ShareMember(ctx, g, [t, u])
    return _share_settle(ctx, g, [m], 5)


def set_interval(ctx: Ctx, g: str, name: str, value: str | None) -> str | None:
    """The group's own assignment interval ``name`` set to ``value`` (None: not set): the
    alter's error, once a description shows it (Kafka applies a group config from its
    metadata after answering the alter)."""
    if value is None:
        return None
    error = ctx.group_config(g, {name: value})
    once_applied(ctx, GROUP_RESOURCE, g, [name], lambda v: v.get(name) == value)
    return error


def _interval(ctx: Ctx, g: str, interval_ms: str | None) -> None:
    """The group's own ``share.assignment.interval.ms`` (None: the broker's, 1 s)."""
    if set_interval(ctx, g, ASSIGNMENT_INTERVAL, interval_ms) not in (None, "NONE"):
        msg = "the group's assignment interval was not set"
        raise RuntimeError(msg)


def _share_topic_created(ctx: Ctx, pause_s: float, interval_ms: str | None = None) -> Any:
    t = ctx.name("later")
    g = share_group(ctx)
    _interval(ctx, g, interval_ms)
    m = ShareMember(ctx, g, [t])
    first = m.heartbeat()
    before = {"epoch": int(first.member_epoch)}
    time.sleep(pause_s)
    ctx.create_topic_raw(t, 2)
    ctx.wait_topic(t, 2)
    return {"before": before, "after": _share_settle(ctx, g, [m], 2)}


def _share_partitions_added(ctx: Ctx, pause_s: float, interval_ms: str | None = None) -> Any:
    t = ctx.create_topic("s", 1)
    coordinator_sees(ctx, t, 1)
    g = share_group(ctx)
    _interval(ctx, g, interval_ms)
    m = ShareMember(ctx, g, [t])
    before = _share_settle(ctx, g, [m], 1)
    time.sleep(pause_s)
    grown = _create_partitions(ctx, t, 3)
    return {"before": before, "grown": grown, "after": _share_settle(ctx, g, [m], 3)}


# A topic change more than an assignment interval after the last target assignment: Kafka
# assigns at the metadata bump, then bumps again once the new partitions are initialized.
@scenario(SHARE)
def epoch_after_topic_created(ctx: Ctx) -> Any:
    return _share_topic_created(ctx, INTERVAL_S)


@scenario(SHARE)
def epoch_after_partitions_added(ctx: Ctx) -> Any:
    return _share_partitions_added(ctx, INTERVAL_S)


# The same at once: Kafka's target assignment for the metadata bump waits for the interval,
# by when the partitions are initialized, so one bump covers both.  The group's own interval
# (5 s) outlasts the topic change on either broker (with Kafka's 1 s, a topic change that
# takes Kafka more than a second to see is assigned at once, then bumped again).
LONG_INTERVAL_MS = "5000"


@scenario(SHARE)
def epoch_after_topic_created_at_once(ctx: Ctx) -> Any:
    return _share_topic_created(ctx, 0, LONG_INTERVAL_MS)


@scenario(SHARE)
def epoch_after_partitions_added_at_once(ctx: Ctx) -> Any:
    return _share_partitions_added(ctx, 0, LONG_INTERVAL_MS)


@scenario(SHARE)
def epoch_after_topic_deleted(ctx: Ctx) -> Any:
    kept, gone = ctx.create_topic("s", 1), ctx.create_topic("d", 2)
    coordinator_sees(ctx, gone, 2)
    g = share_group(ctx)
    m = ShareMember(ctx, g, [kept, gone])
    before = _share_settle(ctx, g, [m], 3)
    deleted = _delete_topic(ctx, gone)
    return {"before": before, "deleted": deleted, "after": _share_settle(ctx, g, [m], 1)}


@scenario(SHARE)
def epoch_two_members_settle(ctx: Ctx) -> Any:
    t = ctx.create_topic("s", 2)
    coordinator_sees(ctx, t, 2)
    g = share_group(ctx)
    a = ShareMember(ctx, g, [t])
    alone = _share_settle(ctx, g, [a], 2)
    b = ShareMember(ctx, g, [t])
    return {"alone": alone, "both": _share_settle(ctx, g, [a, b], 2)}
