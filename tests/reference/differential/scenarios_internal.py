"""Internal topics: what a client that names ``__consumer_offsets`` and friends is answered.

Only non-destructive requests: DeleteTopics of an internal topic, and CreatePartitions or
IncrementalAlterConfigs that are not validate-only, change Apache Kafka's internal topics
(the suite's Kafka is shared by every scenario).  ``__share_group_state`` is left out of the
scenarios that do not read a share group first: Kafka creates it on the first share group,
so their answers would depend on the scenarios run before.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.scenarios_config_describe import describe
from tests.reference.differential.share import unjoined_member
from tests.reference.differential.wire import plain
from txn.batch import build_batch

AREA = "internal-topics"

#: Kafka's internal topics that exist once the suite has warmed up (a group and a
#: transaction coordinator looked up), and the KRaft metadata log, which Kafka hides.
INTERNAL = ("__consumer_offsets", "__transaction_state")
SHARE_STATE = "__share_group_state"
METADATA_LOG = "__cluster_metadata"


def _produce(ctx: Ctx, topic: str, acks: int) -> Any:
    batch = build_batch([(b"k", b"v")], timestamp_ms=int(time.time() * 1000))
    body = {
        "transactional_id": None,
        "acks": acks,
        "timeout": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    p = ctx.call(0, body).responses[0].partition_responses[0]
    return {"error": plain(p.error_code, "error_code"), "message": p.error_message}


@scenario(AREA)
def produce_to_internal_topic(ctx: Ctx) -> Any:
    return {
        f"{topic} acks={acks}": _produce(ctx, topic, acks)
        for topic in (*INTERNAL, METADATA_LOG)
        for acks in (-1, 1)
    }


@scenario(AREA)
def delete_records_of_internal_topic(ctx: Ctx) -> Any:
    out: dict[str, Any] = {}
    for topic in (*INTERNAL, METADATA_LOG):
        resp = ctx.call(
            21,
            {
                "topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": 0}]}],
                "timeout": 10000,
            },
        )
        out[topic] = plain(resp.topics[0].partitions[0])
    return out


@scenario(AREA)
def create_internal_topic(ctx: Ctx) -> Any:
    out: dict[str, Any] = {}
    for topic in (*INTERNAL, METADATA_LOG):
        for validate_only in (False, True):
            resp = ctx.call(
                19,
                {
                    "topics": [
                        {
                            "name": topic,
                            "num_partitions": 1,
                            "replication_factor": 1,
                            "assignments": [],
                            "configs": [],
                        }
                    ],
                    "timeout": 10000,
                    "validate_only": validate_only,
                },
            )
            t = resp.topics[0]
            out[f"{topic} validate_only={validate_only}"] = {
                "error": plain(t.error_code, "error_code"),
                "message": t.error_message,
            }
    return out


@scenario(AREA)
def add_internal_partition_to_txn(ctx: Ctx) -> Any:
    data = ctx.create_topic("p")
    txn = ctx.name("txn")
    err, pid, epoch = ctx.init_pid(txn)
    resp = ctx.call(
        24,
        {
            "v3_and_below_transactional_id": txn,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [
                {"name": "__consumer_offsets", "partitions": [0]},
                {"name": data, "partitions": [0]},
            ],
        },
    )
    return {
        "init": err,
        "results": {
            t.name: [plain(r.partition_error_code, "error_code") for r in t.results_by_partition]
            for t in resp.results_by_topic_v3_and_below
        },
    }


@scenario(AREA)
def metadata_log_is_never_auto_created(ctx: Ctx) -> Any:
    first = ctx.metadata([METADATA_LOG], auto_create=True).topics[0]
    second = ctx.metadata([METADATA_LOG], auto_create=False).topics[0]
    return {"auto_create": plain(first), "after": plain(second)}


def _listed(t: Any) -> Any:
    return {
        "error": plain(t.error_code, "error_code"),
        "is_internal": t.is_internal,
        "partitions": len(t.partitions),
        "leaders": sorted({int(p.leader_id) for p in t.partitions}),
    }


@scenario(AREA)
def metadata_of_internal_topic(ctx: Ctx) -> Any:
    """Metadata lists the internal topics (``is_internal``, their partitions), by name and
    among all topics, with or without auto-creation."""
    out: dict[str, Any] = {}
    for topic in INTERNAL:
        for auto_create in (True, False):
            t = ctx.metadata([topic], auto_create=auto_create).topics[0]
            out[f"{topic} auto_create={auto_create}"] = _listed(t)
    listed = ctx.call(3, {"topics": None, "allow_auto_topic_creation": False})
    out["listed"] = {t.name: _listed(t) for t in listed.topics if t.name in INTERNAL}
    out["user topics internal"] = sorted(
        {bool(t.is_internal) for t in listed.topics if not t.name.startswith("__")}
    )
    return out


@scenario(AREA)
def share_state_topic_once_a_share_group_reads(ctx: Ctx) -> Any:
    """``__share_group_state`` is listed once a share group has read a partition."""
    _topic, member = unjoined_member(ctx, "s")
    member.join()
    member.fetch_until(1)
    deadline = time.monotonic() + 15
    while True:
        t = ctx.metadata([SHARE_STATE], auto_create=False).topics[0]
        if int(t.error_code) == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    listed = ctx.call(3, {"topics": None, "allow_auto_topic_creation": False})
    return {
        "by name": _listed(t),
        "listed": [_listed(x) for x in listed.topics if x.name == SHARE_STATE],
    }


@scenario(AREA)
def change_internal_topic_validate_only(ctx: Ctx) -> Any:
    """CreatePartitions and IncrementalAlterConfigs (validate only): Kafka 4.4 accepts them."""
    out: dict[str, Any] = {}
    for topic in INTERNAL:
        parts = ctx.call(
            37,
            {
                "topics": [{"name": topic, "count": 10, "assignments": None}],
                "timeout": 10000,
                "validate_only": True,
            },
        )
        configs = ctx.call(
            44,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": topic,
                        "configs": [
                            {"name": "retention.ms", "config_operation": 0, "value": "1000"}
                        ],
                    }
                ],
                "validate_only": True,
            },
        )
        out[topic] = {
            "create_partitions": plain(parts.results[0].error_code, "error_code"),
            "alter_configs": plain(configs.responses[0].error_code, "error_code"),
        }
    return out


@scenario(AREA)
def delete_metadata_log(ctx: Ctx) -> Any:
    resp = ctx.call(
        20, {"topics": [{"name": METADATA_LOG, "topic_id": uuid.UUID(int=0)}], "timeout": 10000}
    )
    return plain(resp.responses[0])


@scenario(AREA)
def describe_configs_of_internal_topic(ctx: Ctx) -> Any:
    """The topic configs Kafka creates each internal topic with (kafka-topics.sh --describe
    asks for them)."""
    keys = [
        "cleanup.policy",
        "compression.type",
        "min.insync.replicas",
        "retention.ms",
        "segment.bytes",
        "unclean.leader.election.enable",
    ]
    return {
        topic: {
            "some": describe(ctx, 2, topic, keys),
            "all": describe(ctx, 2, topic, synonyms=False, documentation=False),
        }
        for topic in INTERNAL
    }


def _delete(ctx: Ctx, topic: str) -> str:
    body = {"topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}], "timeout": 10000}
    resp = ctx.call(20, body)
    deadline = time.monotonic() + 10
    while int(ctx.metadata([topic]).topics[0].error_code) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    return str(plain(resp.responses[0].error_code, "error_code"))


@scenario(AREA)
def producer_ids_is_an_ordinary_topic_name(ctx: Ctx) -> Any:
    """``__producer_ids`` names no internal topic in Kafka (the blocks are ProducerIdsRecords
    in the metadata log): a client creates, writes, reads and deletes a topic of that name."""
    topic = "__producer_ids"
    _delete(ctx, topic)  # a run stopped half-way may have left it (not observed)
    out: dict[str, Any] = {"create": ctx.create_topic_raw(topic)}
    ctx.wait_topic(topic, 1)
    meta = ctx.metadata([topic]).topics[0]
    out["metadata"] = [plain(meta.error_code, "error_code"), bool(meta.is_internal)]
    out["produce"] = ctx.produce(topic, ["a", "b"])
    out["fetch"] = ctx.fetch(topic, 0)["records"]
    out["delete"] = _delete(ctx, topic)
    out["after"] = plain(ctx.metadata([topic]).topics[0].error_code, "error_code")
    return out
