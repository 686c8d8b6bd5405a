"""Group membership: static members in both group protocols, commits at an earlier member
epoch (KIP-1251 assignment epochs), and the KIP-848 per-group ``consumer.*`` configs.

Epoch numbers are compared relatively (the epochs Kafka's members hold depend on timing:
it computes a target assignment at most once per assignment interval, docs/conformance.md
"group epochs"): an observation says "the same epoch as before", not 7.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

from tests.reference.differential.ctx import GROUP_RESOURCE, Ctx, client_uuid
from tests.reference.differential.framework import scenario
from tests.reference.differential.scenarios_config_describe import describe
from tests.reference.differential.wire import plain

AREA = "membership"
RANGE_METADATA = b"\x00\x00\x00\x00\x00\x00\x00\x00\x00"


def _err(resp: Any) -> Any:
    return plain(resp.error_code, "error_code")


def _ms(value: Any) -> int:
    return int(value.total_seconds() * 1000) if isinstance(value, timedelta) else int(value)


class Static:
    """A KIP-848 member (ConsumerGroupHeartbeat v1), static when it has an instance id."""

    def __init__(self, ctx: Ctx, group: str, topic: str, instance: str | None) -> None:
        self.ctx, self.group, self.topic, self.instance = ctx, group, topic, instance
        self.member_id = client_uuid()
        self.epoch = 0
        self.owned: list[int] = []
        self.interval = -1

    def heartbeat(self, epoch: int | None = None, instance: str | None = "same") -> Any:
        epoch = self.epoch if epoch is None else epoch
        resp = self.ctx.call(
            68,
            {
                "group_id": self.group,
                "member_id": self.member_id,
                "member_epoch": epoch,
                "instance_id": self.instance if instance == "same" else instance,
                "rack_id": None,
                "rebalance_timeout": 30000,
                "subscribed_topic_names": [self.topic] if epoch == 0 else None,
                "subscribed_topic_regex": None,
                "server_assignor": None,
                "topic_partitions": None
                if epoch < 0
                else [{"topic_id": self.ctx.topic_id(self.topic), "partitions": self.owned}]
                if epoch > 0
                else [],
            },
        )
        if int(resp.error_code) == 0 and int(resp.member_epoch) >= 0:
            self.epoch = int(resp.member_epoch)
            self.interval = _ms(resp.heartbeat_interval)
            if resp.assignment is not None:
                self.owned = sorted(
                    int(p) for tp in resp.assignment.topic_partitions for p in tp.partitions
                )
        return resp

    def until(self, want: int, timeout_s: float = 15) -> list[int]:
        """Heartbeat until the member owns ``want`` partitions (or the time is up)."""
        deadline = time.monotonic() + timeout_s
        while True:
            resp = self.heartbeat()
            if int(resp.error_code) != 0:
                raise RuntimeError(_err(resp))
            if len(self.owned) == want or time.monotonic() > deadline:
                return self.owned
            time.sleep(0.1)


def _group(ctx: Ctx, prefix: str = "mg") -> str:
    g = ctx.name(prefix)
    ctx.find_coordinator(g, 0)
    return g


def _members(ctx: Ctx, g: str) -> Any:
    d = ctx.describe_group(69, g)
    return {
        "error": _err(d),
        "state": d.group_state,
        "members": sorted(
            [
                str(m.instance_id),
                int(m.member_epoch) if int(m.member_epoch) < 0 else "epoch",
                sorted(int(p) for tp in m.assignment.topic_partitions for p in tp.partitions),
            ]
            for m in d.members
        ),
    }


# -- KIP-848 static members ------------------------------------------------------------------


@scenario(AREA)
def static_leave_and_replace(ctx: Ctx) -> Any:
    """A static member leaves temporarily (epoch -2) and a new member with its instance id
    takes its place: the same partitions, at the same epoch, no rebalance."""
    t = ctx.create_topic("m", 2)
    g = _group(ctx)
    a = Static(ctx, g, t, "inst-a")
    owned = a.until(2)
    epoch = a.epoch
    left = a.heartbeat(epoch=-2)
    while_away = _members(ctx, g)
    b = Static(ctx, g, t, "inst-a")
    rejoin = b.heartbeat()
    out = {
        "owned": owned,
        "leave": [_err(left), int(left.member_epoch)],
        "while_away": while_away,
        "rejoin": [_err(rejoin), int(rejoin.member_epoch) == epoch, b.owned],
        "after_rejoin": _members(ctx, g),
    }
    # the replaced member is gone: with its instance id it is fenced, without it unknown
    a.epoch = epoch
    out["old_member_static"] = _err(a.heartbeat())
    out["old_member_dynamic"] = _err(a.heartbeat(instance=None))
    out["old_member_leaves"] = _err(a.heartbeat(epoch=-2))
    return out


@scenario(AREA)
def static_unreleased_instance_id(ctx: Ctx) -> Any:
    """An instance id held by an active member cannot join again until it is released."""
    t = ctx.create_topic("m")
    g = _group(ctx)
    a = Static(ctx, g, t, "inst-a")
    a.until(1)
    b = Static(ctx, g, t, "inst-a")
    taken = b.heartbeat()
    still = a.heartbeat()
    a.heartbeat(epoch=-1)  # left for good: released
    after_leave = b.heartbeat()
    return {
        "taken": [_err(taken), int(taken.member_epoch)],
        "holder_still_fine": _err(still),
        "after_holder_left": [_err(after_leave), b.owned],
        "describe": _members(ctx, g),
    }


@scenario(AREA)
def static_instance_id_mismatch(ctx: Ctx) -> Any:
    """Heartbeats that name another member's or an unknown instance id."""
    t = ctx.create_topic("m")
    g = _group(ctx)
    a = Static(ctx, g, t, "inst-a")
    a.until(1)
    stranger = Static(ctx, g, t, "inst-a")
    stranger.epoch = a.epoch
    dynamic = Static(ctx, g, t, None)
    dynamic.heartbeat()
    return {
        "unknown_instance": _err(a.heartbeat(instance="inst-z")),
        "other_member_same_instance": _err(stranger.heartbeat()),
        "dynamic_member_names_instance": _err(dynamic.heartbeat(instance="inst-a")),
        "holder": _err(a.heartbeat()),
        "dynamic_static_leave": [
            _err(r := dynamic.heartbeat(epoch=-2, instance=None)),
            int(r.member_epoch),
        ],
        "unknown_static_leave": _err(stranger.heartbeat(epoch=-2, instance="inst-q")),
    }


@scenario(AREA)
def static_away_keeps_partitions(ctx: Ctx) -> Any:
    """While a static member is away its partitions are not given to the others; it gets
    them back when it returns."""
    t = ctx.create_topic("m", 2)
    g = _group(ctx)
    a = Static(ctx, g, t, "inst-a")
    a.until(2)
    d = Static(ctx, g, t, None)
    d.heartbeat()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not (len(a.owned) == 1 and len(d.owned) == 1):
        a.heartbeat()
        d.heartbeat()
        time.sleep(0.1)
    a_part = list(a.owned)
    a.heartbeat(epoch=-2)
    for _ in range(5):
        d.heartbeat()
        time.sleep(0.1)
    d_while = list(d.owned)
    back = Static(ctx, g, t, "inst-a")
    back.heartbeat()
    return {
        "split": sorted([len(a_part), len(d.owned)]),
        "dynamic_while_away_unchanged": d_while != a_part and len(d_while) == 1,
        "back_gets_its_partition": back.owned == a_part,
        "describe": _members(ctx, g),
    }


@scenario(AREA)
def static_leave_for_good_then_join(ctx: Ctx) -> Any:
    """A static member that leaves with epoch -1 is removed; its instance id joins anew."""
    t = ctx.create_topic("m")
    g = _group(ctx)
    a = Static(ctx, g, t, "inst-a")
    a.until(1)
    epoch = a.epoch
    left = a.heartbeat(epoch=-1)
    after = _members(ctx, g)
    b = Static(ctx, g, t, "inst-a")
    owned = b.until(1)
    return {
        "leave": [_err(left), int(left.member_epoch)],
        "after_leave": after,
        "rejoin": [owned, b.epoch > epoch],
    }


# -- classic static members ------------------------------------------------------------------


def _join(ctx: Ctx, g: str, member: str = "", instance: str | None = None) -> Any:
    return ctx.call(
        11,
        {
            "group_id": g,
            "session_timeout": 10000,
            "rebalance_timeout": 10000,
            "member_id": member,
            "group_instance_id": instance,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": RANGE_METADATA}],
            "reason": None,
        },
    )


def _sync(ctx: Ctx, g: str, gen: int, member: str, instance: str | None, lead: bool) -> Any:
    return ctx.call(
        14,
        {
            "group_id": g,
            "generation_id": gen,
            "member_id": member,
            "group_instance_id": instance,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": member, "assignment": b"a"}] if lead else [],
        },
    )


def _hb(ctx: Ctx, g: str, gen: int, member: str, instance: str | None) -> Any:
    return _err(
        ctx.call(
            12,
            {
                "group_id": g,
                "generation_id": gen,
                "member_id": member,
                "group_instance_id": instance,
            },
        )
    )


def _leave(ctx: Ctx, g: str, members: list[tuple[str, str | None]]) -> Any:
    resp = ctx.call(
        13,
        {
            "group_id": g,
            "members": [
                {"member_id": m, "group_instance_id": i, "reason": None} for m, i in members
            ],
        },
    )
    return [_err(resp), [_err(m) for m in resp.members]]


def _classic_static(ctx: Ctx, g: str, instance: str) -> tuple[str, int, Any]:
    joined = _join(ctx, g, "", instance)
    member, gen = str(joined.member_id), int(joined.generation_id)
    sync = _sync(ctx, g, gen, member, instance, str(joined.leader) == member)
    return member, gen, [_err(joined), str(joined.leader) == member, _err(sync)]


@scenario(AREA)
def classic_static_rejoin(ctx: Ctx) -> Any:
    """A static member restarts (joins with its instance id and no member id): it gets a new
    member id in the same generation, and the old member id is fenced everywhere."""
    g = _group(ctx, "ms")
    old, gen, first = _classic_static(ctx, g, "inst-c")
    again = _join(ctx, g, "", "inst-c")
    new = str(again.member_id)
    t = ctx.create_topic("m")
    commit_old = ctx.call(
        8,
        {
            "group_id": g,
            "generation_id_or_member_epoch": gen,
            "member_id": old,
            "group_instance_id": "inst-c",
            "topics": [
                {
                    "name": t,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 1,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
    )
    return {
        "first": first,
        "rejoin": [
            _err(again),
            new != old,
            int(again.generation_id) == gen,
            str(again.leader) == new,
            bool(again.skip_assignment),
            len(again.members),
        ],
        "new_sync": _err(
            _sync(ctx, g, int(again.generation_id), new, "inst-c", str(again.leader) == new)
        ),
        "new_heartbeat": _hb(ctx, g, int(again.generation_id), new, "inst-c"),
        "old_heartbeat": _hb(ctx, g, gen, old, "inst-c"),
        "old_sync": _err(_sync(ctx, g, gen, old, "inst-c", False)),
        "old_join": _err(_join(ctx, g, old, "inst-c")),
        "old_commit": _err(commit_old.topics[0].partitions[0]),
        "old_leave": _leave(ctx, g, [(old, "inst-c")]),
        "describe": [
            (m.group_instance_id, str(m.member_id) == new)
            for m in ctx.call(15, {"groups": [g], "include_authorized_operations": False})
            .groups[0]
            .members
        ],
    }


@scenario(AREA)
def classic_static_errors(ctx: Ctx) -> Any:
    """Instance ids that do not match the member id, in every classic request."""
    g = _group(ctx, "ms")
    member, gen, first = _classic_static(ctx, g, "inst-c")
    return {
        "first": first,
        "join_other_instance": _err(_join(ctx, g, member, "inst-x")),
        "join_dynamic_form": _err(_join(ctx, g, member, None)),
        "heartbeat_other_instance": _hb(ctx, g, gen, member, "inst-x"),
        "heartbeat_no_instance": _hb(ctx, g, gen, member, None),
        "sync_other_instance": _err(_sync(ctx, g, gen, member, "inst-x", False)),
        "heartbeat_unknown_member_known_instance": _hb(ctx, g, gen, "someone", "inst-c"),
        "leave_unknown_instance": _leave(ctx, g, [("", "inst-q")]),
        "leave_wrong_member": _leave(ctx, g, [("someone", "inst-c")]),
        "leave_by_instance": _leave(ctx, g, [("", "inst-c")]),
        "after": [
            _hb(ctx, g, gen, member, "inst-c"),
            ctx.call(15, {"groups": [g], "include_authorized_operations": False})
            .groups[0]
            .group_state,
        ],
    }


def _in_thread(fn: Any) -> Any:
    """Run ``fn`` (a blocking request) in a thread; ``result()`` joins it."""
    box: dict[str, Any] = {}
    th = threading.Thread(target=lambda: box.setdefault("r", fn()))
    th.start()

    class Pending:
        @staticmethod
        def result() -> Any:
            th.join(30)
            return box.get("r")

    return Pending


@scenario(AREA)
def classic_static_two_members(ctx: Ctx) -> Any:
    """Two static members; one restarts while the group is stable: no rebalance, the other
    keeps heartbeating at the same generation, the restarted one keeps its assignment."""
    g = _group(ctx, "ms")
    a_id, _, first = _classic_static(ctx, g, "inst-a")
    w2 = ctx.wire()
    b_join = _in_thread(
        lambda: w2.call(
            11,
            {
                "group_id": g,
                "session_timeout": 10000,
                "rebalance_timeout": 10000,
                "member_id": "",
                "group_instance_id": "inst-b",
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": RANGE_METADATA}],
                "reason": None,
            },
        )
    )
    time.sleep(0.5)
    a = _join(ctx, g, a_id, "inst-a")
    b = b_join.result()
    gen, b_id, leader = int(a.generation_id), str(b.member_id), str(a.leader)
    plan = [{"member_id": a_id, "assignment": b"A"}, {"member_id": b_id, "assignment": b"B"}]
    b_sync = _in_thread(
        lambda: w2.call(
            14,
            {
                "group_id": g,
                "generation_id": gen,
                "member_id": b_id,
                "group_instance_id": "inst-b",
                "protocol_type": "consumer",
                "protocol_name": "range",
                "assignments": plan if leader == b_id else [],
            },
        )
    )
    time.sleep(0.2)
    sa = ctx.call(
        14,
        {
            "group_id": g,
            "generation_id": gen,
            "member_id": a_id,
            "group_instance_id": "inst-a",
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": plan if leader == a_id else [],
        },
    )
    sb = b_sync.result()
    restarted = _join(ctx, g, "", "inst-b")
    new_b = str(restarted.member_id)
    new_sync = _sync(ctx, g, int(restarted.generation_id), new_b, "inst-b", False)
    return {
        "first": first,
        "second_generation": [_err(a), _err(b), int(b.generation_id) == gen, leader == a_id],
        "members_seen": sorted(len(x.members) for x in (a, b)),
        "sync": [_err(sa), bytes(sa.assignment), _err(sb), bytes(sb.assignment)],
        "restart_b": [_err(restarted), int(restarted.generation_id) == gen, new_b != b_id],
        "a_heartbeat": _hb(ctx, g, gen, a_id, "inst-a"),
        "new_b_sync": [_err(new_sync), bytes(new_sync.assignment)],
        "old_b_heartbeat": _hb(ctx, g, gen, b_id, "inst-b"),
    }


# -- commits at an earlier member epoch (KIP-1251) -------------------------------------------


def _rebalanced(ctx: Ctx) -> tuple[str, str, Static, Static, int]:
    """A member that owned both partitions at epoch e1 gave one up to a second member and
    moved on to a later epoch; (topic, group, first, second, e1)."""
    t = ctx.create_topic("m", 2)
    g = _group(ctx)
    a = Static(ctx, g, t, None)
    a.until(2)
    e1 = a.epoch
    b = Static(ctx, g, t, None)
    b.heartbeat()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not (
        len(a.owned) == 1 and len(b.owned) == 1 and a.epoch > e1
    ):
        a.heartbeat()
        b.heartbeat()
        time.sleep(0.1)
    return t, g, a, b, e1


def _offset_commit(
    ctx: Ctx, g: str, t: str, member: str, epoch: int, partition: int, offset: int
) -> Any:
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
                            "partition_index": partition,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
    )
    return _err(resp.topics[0].partitions[0])


def _committed(ctx: Ctx, g: str, t: str) -> list[int]:
    resp = ctx.call(
        9,
        {
            "groups": [
                {
                    "group_id": g,
                    "member_id": None,
                    "member_epoch": -1,
                    "topics": [{"name": t, "partition_indexes": [0, 1]}],
                }
            ],
            "require_stable": False,
        },
    )
    return [int(p.committed_offset) for p in resp.groups[0].topics[0].partitions]


@scenario(AREA)
def commit_at_previous_epoch(ctx: Ctx) -> Any:
    t, g, a, b, e1 = _rebalanced(ctx)
    kept, gone = a.owned[0], b.owned[0]
    return {
        "rebalanced": [len(a.owned), len(b.owned), a.epoch > e1],
        "kept_at_previous_epoch": _offset_commit(ctx, g, t, a.member_id, e1, kept, 11),
        "revoked_at_previous_epoch": _offset_commit(ctx, g, t, a.member_id, e1, gone, 12),
        "kept_at_current_epoch": _offset_commit(ctx, g, t, a.member_id, a.epoch, kept, 13),
        "revoked_at_current_epoch": _offset_commit(ctx, g, t, a.member_id, a.epoch, gone, 14),
        "kept_at_next_epoch": _offset_commit(ctx, g, t, a.member_id, a.epoch + 1, kept, 15),
        "kept_at_epoch_zero": _offset_commit(ctx, g, t, a.member_id, 0, kept, 16),
        "new_owner_at_earlier_epoch": _offset_commit(ctx, g, t, b.member_id, e1, gone, 17),
        "new_owner_at_its_epoch": _offset_commit(ctx, g, t, b.member_id, b.epoch, gone, 18),
        "committed": {"kept": _committed(ctx, g, t)[kept], "gone": _committed(ctx, g, t)[gone]},
    }


def _txn_commit(
    ctx: Ctx,
    txn: tuple[str, int, int],
    g: str,
    t: str,
    member: str,
    epoch: int,
    partition: int,
    offset: int,
) -> Any:
    txn_id, pid, pepoch = txn
    resp = ctx.retrying(
        lambda: ctx.call(
            28,
            {
                "transactional_id": txn_id,
                "group_id": g,
                "producer_id": pid,
                "producer_epoch": pepoch,
                "generation_id": epoch,
                "member_id": member,
                "group_instance_id": None,
                "topics": [
                    {
                        "name": t,
                        "partitions": [
                            {
                                "partition_index": partition,
                                "committed_offset": offset,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            },
        )
    )
    return _err(resp.topics[0].partitions[0])


@scenario(AREA)
def txn_commit_at_previous_epoch(ctx: Ctx) -> Any:
    t, g, a, b, e1 = _rebalanced(ctx)
    kept, gone = a.owned[0], b.owned[0]
    txn_id = ctx.name("tx")
    err, pid, pepoch = ctx.init_pid(txn_id)
    add = ctx.retrying(
        lambda: _err(
            ctx.call(
                25,
                {
                    "transactional_id": txn_id,
                    "producer_id": pid,
                    "producer_epoch": pepoch,
                    "group_id": g,
                },
            )
        )
    )
    txn = (txn_id, pid, pepoch)
    out = {
        "rebalanced": [len(a.owned), len(b.owned), a.epoch > e1],
        "init": [err, add],
        "kept_at_previous_epoch": _txn_commit(ctx, txn, g, t, a.member_id, e1, kept, 21),
        "revoked_at_previous_epoch": _txn_commit(ctx, txn, g, t, a.member_id, e1, gone, 22),
        "kept_at_current_epoch": _txn_commit(ctx, txn, g, t, a.member_id, a.epoch, kept, 23),
        "kept_at_next_epoch": _txn_commit(ctx, txn, g, t, a.member_id, a.epoch + 1, kept, 24),
        "unknown_member": _txn_commit(ctx, txn, g, t, client_uuid(), e1, kept, 25),
        "generationless": _txn_commit(ctx, txn, g, t, "", -1, kept, 26),
    }
    out["end"] = ctx.end_txn(txn_id, pid, pepoch, True)
    deadline = time.monotonic() + 10
    committed = _committed(ctx, g, t)
    while committed[kept] < 0 and time.monotonic() < deadline:
        time.sleep(0.1)
        committed = _committed(ctx, g, t)
    out["committed"] = {"kept": committed[kept], "gone": committed[gone]}
    return out


# -- KIP-848 per-group configs ---------------------------------------------------------------

CONSUMER_KEYS = [
    "consumer.session.timeout.ms",
    "consumer.heartbeat.interval.ms",
]


def _validate(ctx: Ctx, g: str, name: str, value: str | None) -> Any:
    resp = ctx.call(
        44,
        {
            "resources": [
                {
                    "resource_type": GROUP_RESOURCE,
                    "resource_name": g,
                    "configs": [{"name": name, "config_operation": 0, "value": value}],
                }
            ],
            "validate_only": True,
        },
    )
    r = resp.responses[0]
    return [_err(r), r.error_message]


@scenario(AREA)
def consumer_group_config_values(ctx: Ctx) -> Any:
    g = ctx.name("gc")
    cases = [
        ("consumer.session.timeout.ms", "44999"),
        ("consumer.session.timeout.ms", "45000"),
        ("consumer.session.timeout.ms", "60001"),
        ("consumer.session.timeout.ms", "x"),
        ("consumer.heartbeat.interval.ms", "4999"),
        ("consumer.heartbeat.interval.ms", "5000"),
        ("consumer.heartbeat.interval.ms", "15000"),
        ("consumer.heartbeat.interval.ms", "15001"),
        ("consumer.heartbeat.interval.ms", "50000"),
    ]
    return {f"{n}={v}": _validate(ctx, g, n, v) for n, v in cases}


@scenario(AREA)
def consumer_group_config_heartbeat_interval(ctx: Ctx) -> Any:
    """The group's consumer.heartbeat.interval.ms is the interval its heartbeats answer."""
    t = ctx.create_topic("m")
    g = _group(ctx)
    out: dict[str, Any] = {"described_defaults": describe(ctx, GROUP_RESOURCE, g, CONSUMER_KEYS)}
    a = Static(ctx, g, t, None)
    a.until(1)
    out["default_interval"] = a.interval
    out["set"] = ctx.group_config(
        g, {"consumer.heartbeat.interval.ms": "7000", "consumer.session.timeout.ms": "50000"}
    )
    a.heartbeat()
    out["after_set"] = a.interval
    b = Static(ctx, g, t, None)
    b.heartbeat()
    out["new_member"] = b.interval
    out["described"] = describe(ctx, GROUP_RESOURCE, g, CONSUMER_KEYS)
    out["delete"] = ctx.group_config(g, {"consumer.heartbeat.interval.ms": None})
    a.heartbeat()
    out["after_delete"] = a.interval
    return out
