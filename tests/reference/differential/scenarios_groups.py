"""Consumer groups: KIP-848 heartbeats, the classic protocol, offsets, admin."""

from __future__ import annotations

import time
from typing import Any

from tests.reference.differential.ctx import Ctx, client_uuid, member_fields
from tests.reference.differential.framework import scenario
from tests.reference.differential.scenarios_epochs import coordinator_sees
from tests.reference.differential.wire import plain

AREA = "consumer-groups"


class Member:
    """A KIP-848 consumer-group member (ConsumerGroupHeartbeat v1)."""

    def __init__(self, ctx: Ctx, group: str, topics: list[str]) -> None:
        self.ctx, self.group, self.topics = ctx, group, topics
        self.member_id = client_uuid()
        self.epoch = 0
        self.owned: list[int] = []

    def heartbeat(self, epoch: int | None = None, topics: list[str] | None = None) -> Any:
        resp = self.ctx.call(
            68,
            {
                **member_fields(self.group, self.member_id, self.epoch if epoch is None else epoch),
                "instance_id": None,
                "rack_id": None,
                "rebalance_timeout": 30000,
                "subscribed_topic_names": self.topics if topics is None else topics,
                "subscribed_topic_regex": None,
                "server_assignor": None,
                "topic_partitions": []
                if (epoch if epoch is not None else self.epoch) == 0
                else [
                    {"topic_id": self.ctx.topic_id(t), "partitions": self.owned}
                    for t in self.topics[:1]
                ],
            },
        )
        if int(resp.error_code) == 0 and int(resp.member_epoch) >= 0:
            self.epoch = int(resp.member_epoch)
            if resp.assignment is not None:
                self.owned = sorted(
                    int(p) for tp in resp.assignment.topic_partitions for p in tp.partitions
                )
        return resp

    def join(self, partitions: int, timeout_s: float = 15) -> list[int]:
        deadline = time.monotonic() + timeout_s
        while True:
            resp = self.heartbeat()
            if int(resp.error_code) != 0:
                raise RuntimeError(plain(resp.error_code, "error_code"))
            if len(self.owned) >= partitions or time.monotonic() > deadline:
                return self.owned
            time.sleep(0.1)


def _group(ctx: Ctx) -> str:
    g = ctx.name("cg")
    ctx.find_coordinator(g, 0)
    return g


def _joined(ctx: Ctx) -> tuple[str, str, Member]:
    """(topic, group, member): a member of a new group that owns the new topic's partition."""
    t = ctx.create_topic("c")
    coordinator_sees(ctx, t, 1)
    g = _group(ctx)
    m = Member(ctx, g, [t])
    m.join(1)
    return t, g, m


def _commit(ctx: Ctx, g: str, t: str, offset: int, epoch: int = -1, member: str = "") -> Any:
    resp = ctx.call(
        8,
        {
            "group_id": g,
            "generation_id_or_member_epoch": epoch,
            "member_id": member,
            "group_instance_id": None,
            "topics": [
                {
                    "name": t,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "md",
                        }
                    ],
                }
            ],
        },
    )
    return plain(resp.topics[0].partitions[0].error_code, "error_code")


def _fetch_offsets(ctx: Ctx, g: str, t: str, partitions: list[int] | None = None) -> Any:
    resp = ctx.call(
        9,
        {
            "groups": [
                {
                    "group_id": g,
                    "member_id": None,
                    "member_epoch": -1,
                    "topics": [{"name": t, "partition_indexes": partitions or [0]}],
                }
            ],
            "require_stable": False,
        },
    )
    return plain(resp.groups[0])


def _describe(ctx: Ctx, g: str) -> Any:
    d = ctx.describe_group(69, g)
    return {
        "error": plain(d.error_code, "error_code"),
        "state": d.group_state,
        "epoch": int(d.group_epoch),
        "assignment_epoch": int(d.assignment_epoch),
        "members": sorted(
            [
                int(m.member_epoch),
                sorted(int(p) for tp in m.assignment.topic_partitions for p in tp.partitions),
            ]
            for m in d.members
        ),
    }


@scenario(AREA)
def heartbeat_join_assigns_all(ctx: Ctx) -> Any:
    t = ctx.create_topic("c", 3)
    coordinator_sees(ctx, t, 3)
    g = _group(ctx)
    m = Member(ctx, g, [t])
    first = m.heartbeat()
    owned = m.join(3)
    return {
        "first_error": plain(first.error_code, "error_code"),
        "first_epoch": int(first.member_epoch),
        "owned": owned,
        "describe": _describe(ctx, g),
    }


@scenario(AREA)
def two_members_share_partitions(ctx: Ctx) -> Any:
    t = ctx.create_topic("c", 4)
    g = _group(ctx)
    a, b = Member(ctx, g, [t]), Member(ctx, g, [t])
    a.join(4)
    b.heartbeat()
    deadline = time.monotonic() + 15
    owned_a: list[int] = []
    owned_b: list[int] = []
    while time.monotonic() < deadline:
        owned_a, owned_b = a.join(0, 0), b.join(0, 0)
        if len(owned_a) == 2 and len(owned_b) == 2:
            break
        time.sleep(0.1)
    return {
        "sizes": sorted([len(owned_a), len(owned_b)]),
        "disjoint": not set(owned_a) & set(owned_b),
    }


@scenario(AREA)
def heartbeat_errors(ctx: Ctx) -> Any:
    t, g, m = _joined(ctx)
    stranger = Member(ctx, g, [t])

    def err(resp: Any) -> Any:
        return plain(resp.error_code, "error_code")

    empty = Member(ctx, g, [t])
    empty.member_id = ""
    return {
        "unknown_member": err(stranger.heartbeat(epoch=4)),
        "fenced": err(m.heartbeat(epoch=m.epoch + 3)),
        "empty_member_id": err(empty.heartbeat()),
        "no_subscription_on_join": err(Member(ctx, g, []).heartbeat(topics=[])),
    }


@scenario(AREA)
def leave_and_rejoin(ctx: Ctx) -> Any:
    _, g, m = _joined(ctx)
    left = m.heartbeat(epoch=-1)
    after_leave = _describe(ctx, g)
    m.epoch = 0
    return {
        "leave": [plain(left.error_code, "error_code"), int(left.member_epoch)],
        "after_leave": after_leave,
        "rejoin": m.join(1),
    }


@scenario(AREA)
def simple_commit_and_fetch(ctx: Ctx) -> Any:
    t = ctx.create_topic("c", 2)
    g = _group(ctx)
    return {
        "commit": _commit(ctx, g, t, 5),
        "fetch": _fetch_offsets(ctx, g, t, [0, 1]),
        "unknown_topic_commit": _commit(ctx, g, ctx.name("none"), 1),
        "unknown_group_fetch": _fetch_offsets(ctx, _group(ctx), t),
    }


@scenario(AREA)
def member_epoch_fences_commits(ctx: Ctx) -> Any:
    t, g, m = _joined(ctx)
    return {
        "right_epoch": _commit(ctx, g, t, 3, m.epoch, m.member_id),
        "stale_epoch": _commit(ctx, g, t, 4, m.epoch - 1, m.member_id),
        "future_epoch": _commit(ctx, g, t, 4, m.epoch + 1, m.member_id),
        "unknown_member": _commit(ctx, g, t, 4, m.epoch, client_uuid()),
        "generationless": _commit(ctx, g, t, 4),
        "fetch": _fetch_offsets(ctx, g, t),
    }


@scenario(AREA)
def offset_delete(ctx: Ctx) -> Any:
    t = ctx.create_topic("c")
    g = _group(ctx)
    _commit(ctx, g, t, 2)

    def delete(group: str) -> Any:
        resp = ctx.call(
            47, {"group_id": group, "topics": [{"name": t, "partitions": [{"partition_index": 0}]}]}
        )
        return plain(resp)

    return {"delete": delete(g), "fetch": _fetch_offsets(ctx, g, t), "unknown": delete(_group(ctx))}


@scenario(AREA)
def delete_groups(ctx: Ctx) -> Any:
    _, g, m = _joined(ctx)

    def delete() -> Any:
        return plain(ctx.call(42, {"groups_names": [g]}).results[0].error_code, "error_code")

    active = delete()
    m.heartbeat(epoch=-1)
    return {"active": active, "empty": delete(), "again": delete(), "describe": _describe(ctx, g)}


@scenario(AREA)
def list_groups_consumer(ctx: Ctx) -> Any:
    _, g, _ = _joined(ctx)
    resp = ctx.call(16, {"states_filter": [], "types_filter": ["consumer"]})
    return [plain(x) for x in resp.groups if x.group_id == g]


def _join_classic(ctx: Ctx, g: str, member_id: str = "") -> Any:
    return ctx.call(
        11,
        {
            "group_id": g,
            "session_timeout": 10000,
            "rebalance_timeout": 10000,
            "member_id": member_id,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00\x00\x00\x00"}],
            "reason": None,
        },
    )


def _sync_classic(
    ctx: Ctx, g: str, generation: int, member: str, assignments: list[dict[str, Any]]
) -> Any:
    return ctx.call(
        14,
        {
            "group_id": g,
            "generation_id": generation,
            "member_id": member,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": assignments,
        },
    )


@scenario(AREA)
def classic_join_sync_heartbeat_leave(ctx: Ctx) -> Any:
    g = _group(ctx)
    first = _join_classic(ctx, g)
    member = str(first.member_id)
    joined = _join_classic(ctx, g, member)
    gen = int(joined.generation_id)
    sync = _sync_classic(ctx, g, gen, member, [{"member_id": member, "assignment": b""}])
    hb = ctx.call(12, {"group_id": g, "generation_id": gen, "member_id": member})
    hb_bad = ctx.call(12, {"group_id": g, "generation_id": gen + 5, "member_id": member})
    leave = ctx.call(
        13,
        {"group_id": g, "members": [{"member_id": member, "group_instance_id": None}]},
    )
    return {
        "first": [plain(first.error_code, "error_code"), bool(first.member_id)],
        "joined": [plain(joined.error_code, "error_code"), gen, joined.protocol_name],
        "is_leader": str(joined.leader) == member,
        "sync": plain(sync.error_code, "error_code"),
        "heartbeat": plain(hb.error_code, "error_code"),
        "heartbeat_bad_generation": plain(hb_bad.error_code, "error_code"),
        "leave": [
            plain(leave.error_code, "error_code"),
            plain(leave.members[0].error_code, "error_code"),
        ],
    }


@scenario(AREA)
def classic_errors(ctx: Ctx) -> Any:
    g = _group(ctx)
    unknown = _join_classic(ctx, g, "nobody")
    hb = ctx.call(12, {"group_id": g, "generation_id": 1, "member_id": "nobody"})
    sync = _sync_classic(ctx, g, 1, "nobody", [])
    return {
        "join_unknown_member": plain(unknown.error_code, "error_code"),
        "heartbeat_unknown": plain(hb.error_code, "error_code"),
        "sync_unknown": plain(sync.error_code, "error_code"),
    }
