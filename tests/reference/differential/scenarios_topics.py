"""Topic lifecycle: names, CreateTopics and CreatePartitions validation, delete and re-create.

Each scenario observes the error code and message of every topic in the answer (messages
are Kafka's exception texts, compared as they are), and what Metadata shows afterwards.
Explicit replica assignments name the broker's own node id, read from Metadata, or a node
that does not exist (both brokers are one-node clusters).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.share import ACCEPT, ShareMember, describe_offsets, share_group
from tests.reference.differential.wire import plain

AREA = "topics"
MISSING_NODE = 4242


def _node(ctx: Ctx) -> int:
    return int(ctx.call(3, {"topics": [], "allow_auto_topic_creation": False}).brokers[0].node_id)


def _spec(
    name: str,
    partitions: int = 1,
    replication: int = 1,
    assignments: Sequence[Sequence[int]] | dict[int, Sequence[int]] = (),
    configs: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    if not isinstance(assignments, dict):
        assignments = dict(enumerate(assignments))
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": replication,
        "assignments": [
            {"partition_index": i, "broker_ids": list(b)} for i, b in assignments.items()
        ],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


def _create(ctx: Ctx, specs: Sequence[dict[str, Any]], validate_only: bool = False) -> list[Any]:
    """CreateTopics; per topic of the answer (in its order): name, error, message, counts."""
    resp = ctx.call(19, {"topics": list(specs), "timeout": 30000, "validate_only": validate_only})
    return [
        {
            "name": t.name,
            "error": plain(t.error_code, "error_code"),
            "message": t.error_message,
            "num_partitions": int(t.num_partitions),
            "replication_factor": int(t.replication_factor),
            "topic_id": plain(t.topic_id, "topic_id"),
        }
        for t in resp.topics
    ]


def _create_one(ctx: Ctx, spec: dict[str, Any], validate_only: bool = True) -> Any:
    return _create(ctx, [spec], validate_only)[0]


def _described(ctx: Ctx, name: str) -> Any:
    """What Metadata says of ``name`` (no auto-creation): error and partition count."""
    t = ctx.metadata([name]).topics[0]
    return {"error": plain(t.error_code, "error_code"), "partitions": len(t.partitions)}


def _partitions(
    ctx: Ctx,
    items: Sequence[tuple[str, int, Sequence[Sequence[int]] | None]],
    validate_only: bool = False,
) -> list[Any]:
    """CreatePartitions; per topic of the answer (sorted by name): name, error, message."""
    resp = ctx.call(
        37,
        {
            "topics": [
                {
                    "name": name,
                    "count": count,
                    "assignments": None
                    if assignments is None
                    else [{"broker_ids": list(b)} for b in assignments],
                }
                for name, count, assignments in items
            ],
            "timeout": 30000,
            "validate_only": validate_only,
        },
    )
    # Kafka answers the topics in no fixed order (by a hash of their names)
    return sorted(
        (
            {"name": r.name, "error": plain(r.error_code, "error_code"), "message": r.error_message}
            for r in resp.results
        ),
        key=lambda r: str(r["name"]),
    )


def _wait_gone(ctx: Ctx, name: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _described(ctx, name)["error"] == "UNKNOWN_TOPIC_OR_PARTITION":
            return
        time.sleep(0.05)


def _delete(ctx: Ctx, name: str) -> Any:
    import uuid  # noqa: PLC0415 - only the zero id

    resp = ctx.call(
        20, {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}], "timeout": 30000}
    )
    r = resp.responses[0]
    _wait_gone(ctx, name)
    return {"error": plain(r.error_code, "error_code"), "message": r.error_message}


# -- names -----------------------------------------------------------------------------


@scenario(AREA)
def names_that_collide(ctx: Ctx) -> Any:
    """``.`` and ``_`` collide (metric names): Kafka refuses the second of a pair."""
    dotted = ctx.name("col.a")
    under = ctx.name("col_a")
    out: dict[str, Any] = {"create dotted": _create_one(ctx, _spec(dotted), validate_only=False)}
    ctx.wait_topic(dotted, 1)
    out["underscored, validate only"] = _create_one(ctx, _spec(under))
    out["underscored"] = _create_one(ctx, _spec(under), validate_only=False)
    out["dotted again"] = _create_one(ctx, _spec(dotted))
    out["metadata underscored"] = _described(ctx, under)
    out["after delete"] = _delete(ctx, dotted)
    out["underscored once the dotted is deleted"] = _create_one(ctx, _spec(under))
    return out


@scenario(AREA)
def names_that_collide_in_one_request(ctx: Ctx) -> Any:
    pair = [_spec(ctx.name("pair.x")), _spec(ctx.name("pair_x"))]
    three = [_spec(ctx.name("tri.y")), _spec(ctx.name("tri_y")), _spec(ctx.name("tri-y"))]
    return {
        "validate only": _create(ctx, pair, validate_only=True),
        "three, one legal": _create(ctx, three, validate_only=True),
    }


@scenario(AREA)
def names_that_collide_with_internal_topics(ctx: Ctx) -> Any:
    return {
        name: _create_one(ctx, _spec(name))
        for name in ("__consumer.offsets", "__transaction.state", "__consumer_offsets.")
    }


@scenario(AREA)
def illegal_names(ctx: Ctx) -> Any:
    """Empty, ``.``/``..``, characters outside ``[a-zA-Z0-9._-]`` and the 249-character limit."""
    base = ctx.name("")
    names = {
        "empty": "",
        "dot": ".",
        "dot dot": "..",
        "three dots": "...",
        "space": f"a b{base}",
        "slash": f"a/b{base}",
        "plus": f"a+b{base}",
        "colon": f"a:b{base}",
        "umlaut": f"\u00e4{base}",
        "249 characters": base + "x" * (249 - len(base)),
        "250 characters": base + "x" * (250 - len(base)),
    }
    return {label: _create_one(ctx, _spec(name)) for label, name in names.items()}


@scenario(AREA)
def longest_name_is_created(ctx: Ctx) -> Any:
    base = ctx.name("")
    name = base + "y" * (249 - len(base))
    created = _create_one(ctx, _spec(name), validate_only=False)
    ctx.wait_topic(name, 1)
    return {"create": created, "metadata": _described(ctx, name)}


# -- CreateTopics ----------------------------------------------------------------------


@scenario(AREA)
def create_counts(ctx: Ctx) -> Any:
    """num_partitions and replication_factor: -1 (the broker's defaults), 0, below -1, above."""
    cases = {
        "defaults": (-1, -1),
        "default partitions": (-1, 1),
        "default replication": (3, -1),
        "zero partitions": (0, 1),
        "minus two partitions": (-2, 1),
        "zero replication": (1, 0),
        "minus two replication": (1, -2),
        "replication 2": (1, 2),
        "replication 3, default partitions": (-1, 3),
        "zero both": (0, 0),
    }
    return {
        label: _create_one(ctx, _spec(ctx.name(f"n{i}"), p, r))
        for i, (label, (p, r)) in enumerate(cases.items())
    }


@scenario(AREA)
def create_defaults_for_real(ctx: Ctx) -> Any:
    name = ctx.name("dflt")
    created = _create_one(ctx, _spec(name, -1, -1), validate_only=False)
    ctx.wait_topic(name, created["num_partitions"])
    return {"create": created, "metadata": _described(ctx, name)}


@scenario(AREA)
def create_with_assignments(ctx: Ctx) -> Any:
    n = _node(ctx)
    cases: dict[str, tuple[Any, int, int]] = {
        "one partition": ([[n]], -1, -1),
        "two partitions": ([[n], [n]], -1, -1),
        "missing broker": ([[MISSING_NODE]], -1, -1),
        "one good one missing": ([[n], [MISSING_NODE]], -1, -1),
        "same broker twice": ([[n, n]], -1, -1),
        "uneven replica counts": ([[n], [n, MISSING_NODE]], -1, -1),
        "no brokers": ([[]], -1, -1),
        "gap in partitions": ({0: [n], 2: [n]}, -1, -1),
        "starting at one": ({1: [n]}, -1, -1),
        "same partition twice": (None, -1, -1),
        "with num_partitions": ([[n]], 1, -1),
        "with replication_factor": ([[n]], -1, 1),
        "with both": ([[n]], 1, 1),
        "negative partition": ({-1: [n]}, -1, -1),
    }
    out: dict[str, Any] = {}
    for i, (label, (assignments, p, r)) in enumerate(cases.items()):
        spec = _spec(ctx.name(f"as{i}"), p, r, assignments or ())
        if assignments is None:
            spec["assignments"] = [
                {"partition_index": 0, "broker_ids": [n]},
                {"partition_index": 0, "broker_ids": [n]},
            ]
        out[label] = _create_one(ctx, spec)
    return out


@scenario(AREA)
def create_with_assignments_for_real(ctx: Ctx) -> Any:
    n = _node(ctx)
    name = ctx.name("asr")
    created = _create_one(ctx, _spec(name, -1, -1, [[n], [n], [n]]), validate_only=False)
    ctx.wait_topic(name, 3)
    bad = ctx.name("asbad")
    refused = _create_one(ctx, _spec(bad, -1, -1, [[MISSING_NODE]]), validate_only=False)
    return {
        "create": created,
        "metadata": _described(ctx, name),
        "refused": refused,
        "refused metadata": _described(ctx, bad),
    }


@scenario(AREA)
def duplicate_names_in_one_request(ctx: Ctx) -> Any:
    a, b = ctx.name("dup-a"), ctx.name("dup-b")
    for_real = _create(ctx, [_spec(a), _spec(b), _spec(a)], validate_only=False)
    ctx.wait_topic(b, 1)
    return {
        "validate only, twice": _create(ctx, [_spec(ctx.name("dup-v")), _spec(ctx.name("dup-v"))]),
        "validate only, three times and one other": _create(
            ctx,
            [_spec(ctx.name("dup-t")), _spec(ctx.name("dup-o")), _spec(ctx.name("dup-t"))] * 1
            + [_spec(ctx.name("dup-t"))],
            validate_only=True,
        ),
        "for real": for_real,
        "metadata duplicated": _described(ctx, a),
        "metadata other": _described(ctx, b),
    }


@scenario(AREA)
def duplicate_of_an_existing_name(ctx: Ctx) -> Any:
    t = ctx.create_topic("exist")
    return {
        "twice": _create(ctx, [_spec(t), _spec(t)], validate_only=False),
        "once": _create(ctx, [_spec(t)], validate_only=False),
        "once, validate only": _create(ctx, [_spec(t)], validate_only=True),
    }


@scenario(AREA)
def validate_only_creates_nothing(ctx: Ctx) -> Any:
    name = ctx.name("vo")
    out = {
        "validate": _create_one(ctx, _spec(name, 2)),
        "metadata after validate": _described(ctx, name),
        "create": _create_one(ctx, _spec(name, 2), validate_only=False),
    }
    ctx.wait_topic(name, 2)
    out["validate again"] = _create_one(ctx, _spec(name, 2))
    out["create again"] = _create_one(ctx, _spec(name, 3), validate_only=False)
    out["metadata"] = _described(ctx, name)
    return out


@scenario(AREA)
def create_with_configs(ctx: Ctx) -> Any:
    cases: dict[str, dict[str, str | None]] = {
        "valid": {"retention.ms": "1000", "cleanup.policy": "compact"},
        "null value": {"retention.ms": None},
        "unknown": {"no.such.config": "1"},
        "broker config": {"log.retention.ms": "1000"},
        "bad and unknown": {"retention.ms": "x", "no.such.config": "1"},
    }
    out = {
        label: _create_one(ctx, _spec(ctx.name(f"cf{i}"), configs=configs))
        for i, (label, configs) in enumerate(cases.items())
    }
    twice = _spec(ctx.name("cfdup"))
    twice["configs"] = [
        {"name": "retention.ms", "value": "1000"},
        {"name": "retention.ms", "value": "2000"},
    ]
    out["same config twice"] = _create_one(ctx, twice)
    bad_partitions = _spec(ctx.name("cfbp"), 0, configs={"retention.ms": "x"})
    out["bad config and zero partitions"] = _create_one(ctx, bad_partitions)
    return out


@scenario(AREA)
def create_refusals_in_order(ctx: Ctx) -> Any:
    """Which check wins when a topic breaks several rules at once."""
    n = _node(ctx)
    t = ctx.create_topic("ord")
    return {
        "existing, zero partitions": _create_one(ctx, _spec(t, 0)),
        "existing, replication 3": _create_one(ctx, _spec(t, 1, 3)),
        "illegal, zero partitions": _create_one(ctx, _spec("a b", 0)),
        "existing, bad assignment": _create_one(ctx, _spec(t, -1, -1, [[MISSING_NODE]])),
        "zero partitions, replication 3": _create_one(ctx, _spec(ctx.name("o2"), 0, 3)),
        "bad assignment and bad config": _create_one(
            ctx, _spec(ctx.name("o3"), -1, -1, [[MISSING_NODE]], {"retention.ms": "x"})
        ),
        "assignment and replication, colliding": _create_one(
            ctx, _spec(t.replace("-ord-", ".ord."), 1, 1, [[n]])
        ),
    }


@scenario(AREA)
def create_partitions_per_request_limit(ctx: Ctx) -> Any:
    return {
        "10000 in two topics": _create(
            ctx, [_spec(ctx.name("l1"), 5000), _spec(ctx.name("l2"), 5000)], validate_only=True
        ),
        "10001 in two topics": _create(
            ctx, [_spec(ctx.name("l3"), 5000), _spec(ctx.name("l4"), 5001)], validate_only=True
        ),
        "10001 with an illegal name": _create(
            ctx, [_spec("a b", 1), _spec(ctx.name("l5"), 10000)], validate_only=True
        ),
    }


# -- CreatePartitions ------------------------------------------------------------------


@scenario(AREA)
def partitions_counts(ctx: Ctx) -> Any:
    t = ctx.create_topic("pc", 2)
    out = {
        "fewer": _partitions(ctx, [(t, 1, None)]),
        "same": _partitions(ctx, [(t, 2, None)]),
        "zero": _partitions(ctx, [(t, 0, None)]),
        "negative": _partitions(ctx, [(t, -1, None)]),
        "more, validate only": _partitions(ctx, [(t, 4, None)], validate_only=True),
        "metadata after validate": _described(ctx, t),
        "more": _partitions(ctx, [(t, 4, None)]),
    }
    ctx.wait_topic(t, 4)
    out["metadata"] = _described(ctx, t)
    out["fewer than now"] = _partitions(ctx, [(t, 3, None)])
    return out


@scenario(AREA)
def partitions_of_unknown_or_illegal_topics(ctx: Ctx) -> Any:
    t = ctx.create_topic("pu")
    return {
        "unknown": _partitions(ctx, [(ctx.name("none"), 2, None)]),
        "unknown, validate only": _partitions(ctx, [(ctx.name("none"), 2, None)], True),
        "illegal name": _partitions(ctx, [("a b", 2, None)]),
        "empty name": _partitions(ctx, [("", 2, None)]),
        "unknown and known": _partitions(ctx, [(ctx.name("none"), 2, None), (t, 2, None)], True),
        "unknown, fewer": _partitions(ctx, [(ctx.name("none"), 0, None)]),
    }


@scenario(AREA)
def partitions_with_assignments(ctx: Ctx) -> Any:
    n = _node(ctx)
    t = ctx.create_topic("pa")
    cases: dict[str, tuple[int, list[list[int]]]] = {
        "one more": (2, [[n]]),
        "two more": (3, [[n], [n]]),
        "too few assignments": (3, [[n]]),
        "too many assignments": (2, [[n], [n]]),
        "missing broker": (2, [[MISSING_NODE]]),
        "same broker twice": (2, [[n, n]]),
        "two replicas": (2, [[n, MISSING_NODE]]),
        "no brokers": (2, [[]]),
        "empty list": (2, []),
        "fewer, with assignments": (1, [[n]]),
    }
    out = {
        label: _partitions(ctx, [(t, count, a)], validate_only=True)
        for label, (count, a) in cases.items()
    }
    out["for real"] = _partitions(ctx, [(t, 3, [[n], [n]])])
    ctx.wait_topic(t, 3)
    out["metadata"] = _described(ctx, t)
    return out


@scenario(AREA)
def partitions_duplicates_in_one_request(ctx: Ctx) -> Any:
    t = ctx.create_topic("pd")
    other = ctx.create_topic("po")
    out = {
        "twice, validate only": _partitions(ctx, [(t, 2, None), (t, 3, None)], True),
        "twice and another": _partitions(ctx, [(t, 2, None), (other, 2, None), (t, 2, None)]),
    }
    ctx.wait_topic(other, 2)
    out["metadata duplicated"] = _described(ctx, t)
    out["metadata other"] = _described(ctx, other)
    return out


@scenario(AREA)
def partitions_added_per_request_limit(ctx: Ctx) -> Any:
    t = ctx.create_topic("pl")
    u = ctx.create_topic("pm")
    return {
        "10000 more": _partitions(ctx, [(t, 5001, None), (u, 5000, None)], True),
        "10001 more": _partitions(ctx, [(t, 5001, None), (u, 5001, None)], True),
        "10001 more and an unknown": _partitions(
            ctx, [(t, 10002, None), (ctx.name("none"), 3, None)], True
        ),
    }


# -- delete and re-create --------------------------------------------------------------


@scenario(AREA)
def delete_and_recreate(ctx: Ctx) -> Any:
    """The re-created topic is a new one: new id, its own partition count, an empty log."""
    t = ctx.create_topic("dr", 2)
    old_id = ctx.topic_id(t)
    ctx.produce(t, ["a", "b"])
    out: dict[str, Any] = {"delete": _delete(ctx, t)}
    out["create again"] = _create_one(ctx, _spec(t, 1), validate_only=False)
    ctx._topic_ids.pop(t, None)
    ctx.wait_topic(t, 1)
    out["same id"] = ctx.topic_id(t) == old_id
    out["fetch"] = ctx.fetch(t, 0)
    out["fetch by the old id"] = ctx.fetch(t, 0, topic_id=old_id)
    out["list latest"] = ctx.list_offset(t, -1)
    out["produce"] = ctx.produce(t, ["c"])
    return out


@scenario(AREA)
def delete_topics_errors(ctx: Ctx) -> Any:
    """DeleteTopics of unknown names and ids, an illegal name, and a name given twice."""
    import uuid  # noqa: PLC0415 - ids of topics that do not exist

    t = ctx.create_topic("dx")

    def delete(entries: list[tuple[str | None, uuid.UUID]]) -> Any:
        resp = ctx.call(
            20,
            {"topics": [{"name": n, "topic_id": i} for n, i in entries], "timeout": 30000},
        )
        return sorted(
            (
                {
                    "name": r.name,
                    "error": plain(r.error_code, "error_code"),
                    "message": r.error_message,
                    "topic_id": plain(r.topic_id, "topic_id"),
                }
                for r in resp.responses
            ),
            key=lambda r: str(r["name"]),
        )

    zero = uuid.UUID(int=0)
    out = {
        "unknown name": delete([(ctx.name("none"), zero)]),
        "unknown id": delete([(None, uuid.uuid4())]),
        "illegal name": delete([("a b", zero)]),
        "twice": delete([(t, zero), (t, zero)]),
        "twice by id": delete([(None, ctx.topic_id(t)), (None, ctx.topic_id(t))]),
        "by name and by id": delete([(t, zero), (None, ctx.topic_id(t))]),
    }
    _wait_gone(ctx, t)
    out["metadata"] = _described(ctx, t)
    return out


@scenario(AREA)
def delete_and_recreate_committed_offsets(ctx: Ctx) -> Any:
    """Kafka deletes the committed offsets of a deleted topic; the re-created one has none."""
    t = ctx.create_topic("dro")
    g = ctx.name("cg")
    ctx.find_coordinator(g, 0)
    commit = {
        "group_id": g,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
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
    }
    fetch = {
        "groups": [
            {
                "group_id": g,
                "member_id": None,
                "member_epoch": -1,
                "topics": [{"name": t, "partition_indexes": [0]}],
            }
        ],
        "require_stable": False,
    }
    out: dict[str, Any] = {"commit": plain(ctx.call(8, commit).topics[0].partitions[0])}
    out["delete"] = _delete(ctx, t)
    ctx.create_topic("dro")
    deadline = time.monotonic() + 10
    while True:  # Kafka removes the offsets asynchronously, once the deletion is replayed
        fetched = plain(ctx.call(9, fetch).groups[0])
        offset = fetched["topics"][0]["partitions"][0]["committed_offset"]
        if offset == -1 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    out["fetch after re-create"] = fetched
    return out


@scenario(AREA)
def delete_and_recreate_share_state(ctx: Ctx) -> Any:
    """Kafka deletes a share group's state for a deleted topic; the re-created topic is
    read from its start (``earliest``), not from the acknowledged offsets of the old one."""
    t = ctx.create_topic("drs")
    ctx.produce(t, ["a", "b"])
    group = share_group(ctx)
    m = ShareMember(ctx, group, [t])
    m.join()
    got = m.fetch_until(2)
    out: dict[str, Any] = {
        "first": got,
        "ack": m.acknowledge({(t, 0): [(0, 1, [ACCEPT])]}),
        "leave": m.leave(),
    }
    out["delete"] = _delete(ctx, t)
    ctx.create_topic("drs")
    ctx._topic_ids.pop(t, None)
    ctx.wait_topic(t, 1)
    ctx.produce(t, ["c"])
    again = ShareMember(ctx, group, [t])
    again.join()
    out["after re-create"] = again.fetch_until(1, timeout_s=5)
    out["offsets"] = describe_offsets(ctx, group, [t])
    return out


# -- Metadata --------------------------------------------------------------------------


def _metadata_of(ctx: Ctx, name: str, auto_create: bool) -> Any:
    t = ctx.metadata([name], auto_create=auto_create).topics[0]
    return {
        "error": plain(t.error_code, "error_code"),
        "is_internal": t.is_internal,
        "partitions": len(t.partitions),
    }


@scenario(AREA)
def metadata_never_auto_creates_a_colliding_name(ctx: Ctx) -> Any:
    """Auto-creation goes through the same checks: a colliding name is never created."""
    dotted = ctx.create_topic("mc.a")
    out: dict[str, Any] = {}
    for name in (dotted.replace("mc.a", "mc_a"), "__consumer.offsets", "__transaction.state"):
        first = _metadata_of(ctx, name, auto_create=True)
        time.sleep(0.5)  # Kafka creates asynchronously: a created topic would show by now
        out[name] = {"auto_create": first, "after": _metadata_of(ctx, name, auto_create=False)}
    return out
