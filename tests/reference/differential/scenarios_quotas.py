"""Client quotas (KIP-546): AlterClientQuotas validation and results, DescribeClientQuotas
matching (exact, default and specified components, strict or not) and its filter errors, and
the ThrottleTimeMs of a Produce over its ``producer_byte_rate``.

Entities are named after the scenario's token and removed at the end; the one default entity
a scenario sets has a value no client reaches.  Answers are sorted (Kafka builds them from
hash maps).
"""

from __future__ import annotations

import time
from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.wire import Wire, plain
from txn.api_keys import ApiKey
from txn.batch import build_batch

AREA = "quotas"

EXACT, DEFAULT, SPECIFIED = 0, 1, 2

Entity = list[tuple[str, str | None]]


def _entity(entity: Entity) -> list[dict[str, Any]]:
    return [{"entity_type": t, "entity_name": n} for t, n in entity]


def _alter(
    ctx: Ctx,
    entries: list[tuple[Entity, dict[str, float | None]]],
    *,
    validate_only: bool = False,
) -> list[Any]:
    resp = ctx.call(
        ApiKey.ALTER_CLIENT_QUOTAS,
        {
            "entries": [
                {
                    "entity": _entity(entity),
                    "ops": [
                        {"key": k, "value": 0.0 if v is None else v, "remove": v is None}
                        for k, v in ops.items()
                    ],
                }
                for entity, ops in entries
            ],
            "validate_only": validate_only,
        },
    )
    if not validate_only:
        time.sleep(1.0)  # Kafka's brokers apply the alter to their metadata after answering it
    return sorted(
        (
            {
                "entity": sorted([e.entity_type, e.entity_name or "<default>"] for e in r.entity),
                "error": plain(r.error_code, "error_code"),
                "message": r.error_message,
            }
            for r in resp.entries
        ),
        key=str,
    )


def _describe(ctx: Ctx, components: list[tuple[str, int, str | None]], strict: bool) -> Any:
    resp = ctx.call(
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        {
            "components": [
                {"entity_type": t, "match_type": m, "match": n} for t, m, n in components
            ],
            "strict": strict,
        },
    )
    entries = None
    if resp.entries is not None:
        entries = sorted(
            (
                {
                    "entity": sorted(
                        [e.entity_type, e.entity_name or "<default>"] for e in entry.entity
                    ),
                    "values": sorted([v.key, float(v.value)] for v in entry.values),
                }
                for entry in resp.entries
                # only this scenario's entities and the defaults it set
                if all(e.entity_name is None or ctx.token in e.entity_name for e in entry.entity)
            ),
            key=str,
        )
    return {
        "error": plain(resp.error_code, "error_code"),
        "message": resp.error_message,
        "entries": entries,
    }


@scenario(AREA)
def alter_validation_errors(ctx: Ctx) -> Any:
    user = ctx.name("u")
    cases: list[tuple[Entity, dict[str, float | None]]] = [
        ([], {"producer_byte_rate": 1024.0}),
        ([("group", "g")], {"producer_byte_rate": 1024.0}),
        ([("user", "")], {"producer_byte_rate": 1024.0}),
        ([("user", user)], {"no_such_quota": 1.0}),
        ([("user", user)], {"producer_byte_rate": -1.0}),
        ([("user", user)], {"producer_byte_rate": 0.0}),
        ([("user", user)], {"producer_byte_rate": 1.5}),
        ([("user", user)], {"consumer_byte_rate": 1e30}),
        ([("user", user)], {"request_percentage": 0.5}),
        ([("user", user), ("ip", "10.0.0.1")], {"producer_byte_rate": 1.0}),
        ([("ip", "10.0.0.1")], {"producer_byte_rate": 1.0}),
        ([("ip", "10.0.0.1")], {"connection_creation_rate": 2.5}),
        ([("ip", "10.0.0.1")], {"connection_creation_rate": 3e9}),
        ([("client-id", user)], {"connection_creation_rate": 3.0}),
        ([("user", user)], {"producer_byte_rate": None}),
    ]
    out = [_alter(ctx, [case], validate_only=True) for case in cases]
    # An entity given twice in one request, a key given twice in one entry.
    out.append(
        _alter(
            ctx,
            [
                ([("user", user)], {"producer_byte_rate": 1024.0}),
                ([("user", user)], {"consumer_byte_rate": 1024.0}),
            ],
            validate_only=True,
        )
    )
    out.append(_describe(ctx, [("user", EXACT, user)], False))
    return out


@scenario(AREA)
def alter_describe_and_remove(ctx: Ctx) -> Any:
    user, client = ctx.name("u"), ctx.name("c")
    entities: list[tuple[Entity, dict[str, float | None]]] = [
        ([("user", user)], {"producer_byte_rate": 1048576.0, "request_percentage": 200.5}),
        ([("client-id", client)], {"consumer_byte_rate": 2097152.0}),
        ([("user", user), ("client-id", client)], {"controller_mutation_rate": 100.0}),
        ([("user", user), ("client-id", None)], {"producer_byte_rate": 4194304.0}),
    ]
    out: dict[str, Any] = {"validate_only": _alter(ctx, entities, validate_only=True)}
    out["after_validate_only"] = _describe(ctx, [("user", EXACT, user)], False)
    out["alter"] = _alter(ctx, entities)
    filters: dict[str, list[tuple[str, int, str | None]]] = {
        "user_exact": [("user", EXACT, user)],
        "client_exact": [("client-id", EXACT, client)],
        "user_exact_client_specified": [("user", EXACT, user), ("client-id", SPECIFIED, None)],
        "user_exact_client_default": [("user", EXACT, user), ("client-id", DEFAULT, None)],
        "client_specified": [("client-id", SPECIFIED, None)],
        "user_specified": [("user", SPECIFIED, None)],
        "all": [],
    }
    for label, components in filters.items():
        for strict in (False, True):
            out[f"{label}_{'strict' if strict else 'loose'}"] = _describe(ctx, components, strict)
    # Change one value, remove one key, then everything.
    out["change"] = _alter(
        ctx, [([("user", user)], {"producer_byte_rate": 2048.0, "request_percentage": None})]
    )
    out["changed"] = _describe(ctx, [("user", EXACT, user)], True)
    out["remove"] = _alter(
        ctx,
        [
            ([("user", user)], {"producer_byte_rate": None}),
            ([("client-id", client)], {"consumer_byte_rate": None}),
            ([("user", user), ("client-id", client)], {"controller_mutation_rate": None}),
            ([("user", user), ("client-id", None)], {"producer_byte_rate": None}),
        ],
    )
    out["removed"] = _describe(ctx, [("user", EXACT, user)], False)
    return out


@scenario(AREA)
def describe_filter_errors(ctx: Ctx) -> Any:
    cases: list[list[tuple[str, int, str | None]]] = [
        [("", SPECIFIED, None)],
        [("user", SPECIFIED, None), ("user", EXACT, "a")],
        [("user", EXACT, None)],
        [("user", DEFAULT, "a")],
        [("user", SPECIFIED, "a")],
        [("user", 7, None)],
        [("group", SPECIFIED, None)],
        [("ip", SPECIFIED, None), ("user", SPECIFIED, None)],
        [("ip", SPECIFIED, None)],
    ]
    return [_describe(ctx, case, False) for case in cases]


@scenario(AREA)
def produce_over_quota_is_throttled(ctx: Ctx) -> Any:
    """A Produce far over its client id's producer_byte_rate answers a ThrottleTimeMs."""
    client = ctx.name("slow")
    topic = ctx.create_topic("t", 1)
    out: dict[str, Any] = {
        "alter": _alter(ctx, [([("client-id", client)], {"producer_byte_rate": 1024.0})])
    }
    slow = Wire(ctx.bootstrap, client_id=client)
    try:
        batch = build_batch([(None, b"x" * 60_000)], timestamp_ms=int(time.time() * 1000))
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        }
        resp = slow.call(ApiKey.PRODUCE, body)
        part = resp.responses[0].partition_responses[0]
        out["produce"] = {
            "error": plain(part.error_code, "error_code"),
            "throttled": resp.throttle_time.total_seconds() > 0,
        }
    finally:
        slow.close()
    out["remove"] = _alter(ctx, [([("client-id", client)], {"producer_byte_rate": None})])
    return out


def _as(ctx: Ctx, client_id: str, key: ApiKey, body: dict[str, Any]) -> Any:
    """One request on a new connection of ``client_id`` (a throttled connection is muted)."""
    wire = Wire(ctx.bootstrap, client_id=client_id)
    try:
        return wire.call(key, body)
    finally:
        wire.close()


def _create(name: str, partitions: int) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout": 30000,
        "validate_only": False,
    }


@scenario(AREA)
def controller_mutation_quota(ctx: Ctx) -> Any:
    """KIP-599: CreateTopics and CreatePartitions over controller_mutation_rate (strict:
    THROTTLING_QUOTA_EXCEEDED once the burst is spent)."""
    client = ctx.name("mut")
    first, second = ctx.name("m1"), ctx.name("m2")
    out: dict[str, Any] = {
        "alter": _alter(ctx, [([("client-id", client)], {"controller_mutation_rate": 1.0})])
    }

    def topics(resp: Any) -> Any:
        return {
            "throttled": resp.throttle_time.total_seconds() > 0,
            "topics": [[plain(t.error_code, "error_code"), t.error_message] for t in resp.topics],
        }

    # a burst of 11 (11 windows of 1 s): the first request may take more than there is
    out["create_burst"] = topics(_as(ctx, client, ApiKey.CREATE_TOPICS, _create(first, 20)))
    out["create_refused"] = topics(_as(ctx, client, ApiKey.CREATE_TOPICS, _create(second, 1)))
    parts = _as(
        ctx,
        client,
        ApiKey.CREATE_PARTITIONS,
        {
            "topics": [{"name": first, "count": 21, "assignments": None}],
            "timeout": 30000,
            "validate_only": False,
        },
    )
    out["partitions_refused"] = {
        "throttled": parts.throttle_time.total_seconds() > 0,
        "results": [[plain(r.error_code, "error_code"), r.error_message] for r in parts.results],
    }
    out["remove"] = _alter(ctx, [([("client-id", client)], {"controller_mutation_rate": None})])
    ctx.call(
        ApiKey.DELETE_TOPICS,
        {"topics": [{"name": first, "topic_id": None}], "timeout_ms": 30000},
    )
    return out


@scenario(AREA)
def controller_mutation_quota_delete(ctx: Ctx) -> Any:
    """DeleteTopics over controller_mutation_rate once the burst is spent (KIP-599)."""
    client = ctx.name("del")
    topic = ctx.create_topic("d", 20)
    out: dict[str, Any] = {
        "alter": _alter(ctx, [([("client-id", client)], {"controller_mutation_rate": 1.0})])
    }
    spent = _as(ctx, client, ApiKey.CREATE_TOPICS, _create(ctx.name("big"), 20))
    out["create_burst"] = [plain(t.error_code, "error_code") for t in spent.topics]
    deleted = _as(
        ctx,
        client,
        ApiKey.DELETE_TOPICS,
        {"topics": [{"name": topic, "topic_id": None}], "timeout_ms": 30000},
    )
    out["delete_refused"] = {
        "throttled": deleted.throttle_time.total_seconds() > 0,
        "responses": [
            [plain(r.error_code, "error_code"), r.error_message] for r in deleted.responses
        ],
    }
    out["remove"] = _alter(ctx, [([("client-id", client)], {"controller_mutation_rate": None})])
    for name in (topic, ctx.name("big")):
        ctx.call(
            ApiKey.DELETE_TOPICS,
            {"topics": [{"name": name, "topic_id": None}], "timeout_ms": 30000},
        )
    return out


@scenario(AREA)
def fetch_over_quota_answers_no_data(ctx: Ctx) -> Any:
    """A Fetch far over consumer_byte_rate: throttled, and answered without partitions."""
    client = ctx.name("reader")
    topic = ctx.create_topic("f", 1)
    ctx.produce(topic, ["y" * 60_000])
    out: dict[str, Any] = {
        "alter": _alter(ctx, [([("client-id", client)], {"consumer_byte_rate": 1024.0})])
    }
    body = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic_id": ctx.topic_id(topic),
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    answers = []
    for _ in range(2):
        resp = _as(ctx, client, ApiKey.FETCH, body)
        answers.append(
            {
                "throttled": resp.throttle_time.total_seconds() > 0,
                "error": plain(resp.error_code, "error_code"),
                "records": [len(p.records or b"") for t in resp.responses for p in t.partitions],
            }
        )
    out["fetches"] = answers
    out["remove"] = _alter(ctx, [([("client-id", client)], {"consumer_byte_rate": None})])
    return out


@scenario(AREA)
def old_produce_over_quota_answered_at_once(ctx: Ctx) -> Any:
    """A Produce v3 (before KIP-219, so its client does not throttle itself) far over its
    quota is answered at once with its ThrottleTimeMs; Kafka 4.4 delays no response and
    mutes the connection after."""
    client = ctx.name("old")
    topic = ctx.create_topic("t", 1)
    out: dict[str, Any] = {
        "alter": _alter(ctx, [([("client-id", client)], {"producer_byte_rate": 1024.0})])
    }
    slow = Wire(ctx.bootstrap, client_id=client)
    try:
        batch = build_batch([(None, b"x" * 60_000)], timestamp_ms=int(time.time() * 1000))
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        }
        started = time.monotonic()
        resp = slow.call(ApiKey.PRODUCE, body, version=3)
        elapsed = time.monotonic() - started
        throttle_s = resp.throttle_time.total_seconds()
        part = resp.responses[0].partition_responses[0]
        out["produce"] = {
            "error": plain(part.error_code, "error_code"),
            "throttled": throttle_s > 0,
            "answered_within_a_tenth_of_it": elapsed < throttle_s / 10,
        }
    finally:
        slow.close()
    out["remove"] = _alter(ctx, [([("client-id", client)], {"producer_byte_rate": None})])
    return out
