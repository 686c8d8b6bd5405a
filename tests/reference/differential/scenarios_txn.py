"""Transactions (KIP-98, transaction version 1 on the wire): commit, abort, fencing, timeouts."""

from __future__ import annotations

import datetime
import time
from typing import Any

from producer.protocol.raw import describe_transactions_raw
from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.wire import plain

AREA = "transactions"


def _begin(ctx: Ctx, t: str, timeout_ms: int = 60000, tag: str = "tx") -> tuple[str, int, int]:
    tid = ctx.name(tag)
    err, pid, epoch = ctx.init_pid(tid, timeout_ms)
    if err != "NONE":
        msg = f"InitProducerId: {err}"
        raise RuntimeError(msg)
    return tid, pid, epoch


def _topic_and_producer(ctx: Ctx, *first: str) -> tuple[str, str, int, int]:
    """A new topic (holding ``first``, written without a transaction), and a new
    transactional producer's (id, producer id, epoch)."""
    t = ctx.create_topic("t")
    if first:
        ctx.produce(t, list(first))
    return (t, *_begin(ctx, t))


def _describe(ctx: Ctx, tid: str) -> Any:
    d = describe_transactions_raw(ctx.w.conn, 0, tid)
    return {
        "error": d.error.name,
        "state": d.state,
        "timeout_ms": d.transaction_timeout_ms,
        "partitions": sorted([tp.topic, tp.partition] for tp in d.partitions),
    }


@scenario(AREA)
def commit_visible_to_read_committed(ctx: Ctx) -> Any:
    t, tid, pid, epoch = _topic_and_producer(ctx)
    out: dict[str, Any] = {"add": ctx.add_partitions(tid, pid, epoch, t)}
    out["produce"] = ctx.produce(t, ["a", "b"], pid=pid, epoch=epoch, seq=0, txn_id=tid)
    out["lso_open"] = ctx.fetch(t, 0, isolation=1)
    out["uncommitted_view"] = ctx.fetch(t, 0, isolation=0)["records"]
    out["describe_ongoing"] = _describe(ctx, tid)
    out["end"] = ctx.end_txn(tid, pid, epoch, True)
    ctx.wait_lso(t, 3)
    out["committed"] = ctx.fetch(t, 0, isolation=1)
    # Kafka writes CompleteCommit once every marker is acknowledged, after EndTxn answered:
    # wait (bounded) for the end state instead of racing it.
    deadline = time.monotonic() + 10
    done = _describe(ctx, tid)
    while done["state"] == "PrepareCommit" and time.monotonic() < deadline:
        time.sleep(0.05)
        done = _describe(ctx, tid)
    out["describe_done"] = done
    return out


@scenario(AREA)
def abort_hidden_from_read_committed(ctx: Ctx) -> Any:
    t, tid, pid, epoch = _topic_and_producer(ctx, "before")
    ctx.add_partitions(tid, pid, epoch, t)
    ctx.produce(t, ["a", "b"], pid=pid, epoch=epoch, seq=0, txn_id=tid)
    out = {"end": ctx.end_txn(tid, pid, epoch, False)}
    ctx.wait_lso(t, 4)
    ctx.produce(t, ["after"])
    out["read_committed"] = ctx.fetch(t, 0, isolation=1)
    out["read_uncommitted"] = ctx.fetch(t, 0, isolation=0)
    out["describe"] = _describe(ctx, tid)
    return out


@scenario(AREA)
def two_transactions_in_a_row(ctx: Ctx) -> Any:
    t, tid, pid, epoch = _topic_and_producer(ctx)
    out = {}
    ctx.add_partitions(tid, pid, epoch, t)
    out["p1"] = ctx.produce(t, ["a"], pid=pid, epoch=epoch, seq=0, txn_id=tid)
    out["e1"] = ctx.end_txn(tid, pid, epoch, True)
    out["add2"] = ctx.add_partitions(tid, pid, epoch, t)
    out["p2"] = ctx.produce(t, ["b"], pid=pid, epoch=epoch, seq=1, txn_id=tid)
    out["e2"] = ctx.end_txn(tid, pid, epoch, False)
    ctx.wait_lso(t, 4)
    out["fetch"] = ctx.fetch(t, 0, isolation=1)
    return out


@scenario(AREA)
def produce_without_add_partitions(ctx: Ctx) -> Any:
    t, tid, pid, epoch = _topic_and_producer(ctx)
    return {
        "produce": ctx.produce(t, ["a"], pid=pid, epoch=epoch, seq=0, txn_id=tid),
        "fetch": ctx.fetch(t, 0),
    }


@scenario(AREA)
def fencing_by_second_init(ctx: Ctx) -> Any:
    t, tid, pid, epoch = _topic_and_producer(ctx)
    ctx.add_partitions(tid, pid, epoch, t)
    zombie = ctx.produce(t, ["zombie"], pid=pid, epoch=epoch, seq=0, txn_id=tid)
    err, pid2, epoch2 = ctx.init_pid(tid)
    ctx.wait_lso(t, 2)
    return {
        "zombie": zombie,
        "second_init": err,
        "same_pid": pid2 == pid,
        "epoch_step": epoch2 - epoch,
        "old_add": ctx.add_partitions(tid, pid, epoch, t),
        "old_produce": ctx.produce(t, ["x"], pid=pid, epoch=epoch, seq=1, txn_id=tid),
        "old_end": ctx.end_txn(tid, pid, epoch, True),
        "read_committed": ctx.fetch(t, 0, isolation=1),
        "new_add": ctx.add_partitions(tid, pid2, epoch2, t),
        "new_end": ctx.end_txn(tid, pid2, epoch2, True),
    }


@scenario(AREA)
def transaction_timeout_aborts(ctx: Ctx) -> Any:
    t = ctx.create_topic("t")
    tid, pid, epoch = _begin(ctx, t, timeout_ms=1000)
    ctx.add_partitions(tid, pid, epoch, t)
    ctx.produce(t, ["slow"], pid=pid, epoch=epoch, seq=0, txn_id=tid)
    lso = ctx.wait_lso(t, 2, timeout_s=20)  # the coordinator aborts after 1 s
    deadline = time.monotonic() + 10
    while _describe(ctx, tid)["state"] not in ("CompleteAbort", "Empty") and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    return {
        "lso": lso,
        "read_committed": ctx.fetch(t, 0, isolation=1),
        "late_commit": ctx.end_txn(tid, pid, epoch, True),
        "late_produce": ctx.produce(t, ["x"], pid=pid, epoch=epoch, seq=1, txn_id=tid),
        "describe": _describe(ctx, tid),
        "reinit": ctx.init_pid(tid, 1000)[0],
    }


@scenario(AREA)
def end_txn_edge_cases(ctx: Ctx) -> Any:
    t, tid, pid, epoch = _topic_and_producer(ctx)
    out = {"commit_empty": ctx.end_txn(tid, pid, epoch, True)}
    out["abort_empty"] = ctx.end_txn(tid, pid, epoch, False)
    ctx.add_partitions(tid, pid, epoch, t)
    out["commit"] = ctx.end_txn(tid, pid, epoch, True)
    out["commit_again"] = ctx.end_txn(tid, pid, epoch, True)
    out["abort_after_commit"] = ctx.end_txn(tid, pid, epoch, False)
    out["wrong_pid"] = ctx.end_txn(tid, pid + 1000, epoch, True)
    out["unknown_tid"] = ctx.end_txn(ctx.name("none"), pid, epoch, True)
    return out


@scenario(AREA)
def add_partitions_errors(ctx: Ctx) -> Any:
    t, tid, pid, epoch = _topic_and_producer(ctx)
    return {
        "unknown_topic": ctx.add_partitions(tid, pid, epoch, ctx.name("none")),
        "unknown_partition": ctx.add_partitions(tid, pid, epoch, t, [5]),
        "wrong_pid": ctx.add_partitions(tid, pid + 1000, epoch, t),
        "future_epoch": ctx.add_partitions(tid, pid, epoch + 3, t),
        "unknown_tid": ctx.add_partitions(ctx.name("nope"), pid, epoch, t),
        "ok_twice": [
            ctx.add_partitions(tid, pid, epoch, t),
            ctx.add_partitions(tid, pid, epoch, t),
        ],
    }


@scenario(AREA)
def init_producer_id_forms(ctx: Ctx) -> Any:
    t = ctx.create_topic("t")
    tid = ctx.name("tx")
    err, pid, epoch = ctx.init_pid(tid)
    return {
        "first": [err, epoch],
        "bump_with_current": ctx.init_pid(tid, pid=pid, epoch=epoch)[0::2],
        "bump_with_stale": ctx.init_pid(tid, pid=pid, epoch=epoch)[0],
        "timeout_too_large": ctx.init_pid(ctx.name("big"), 900_001)[0],
        "timeout_zero": ctx.init_pid(ctx.name("zero"), 0)[0],
        "idempotent": ctx.init_pid()[0::2],
        "topic": t != "",
    }


@scenario(AREA)
def read_committed_with_open_transaction(ctx: Ctx) -> Any:
    t, tid, pid, epoch = _topic_and_producer(ctx, "a")
    ctx.add_partitions(tid, pid, epoch, t)
    ctx.produce(t, ["t0"], pid=pid, epoch=epoch, seq=0, txn_id=tid)
    ctx.produce(t, ["b"])
    out = {
        "read_committed": ctx.fetch(t, 0, isolation=1),
        "list_latest_committed": ctx.list_offset(t, -1, isolation=1),
        "list_latest_uncommitted": ctx.list_offset(t, -1, isolation=0),
    }
    ctx.end_txn(tid, pid, epoch, False)
    return out


@scenario(AREA)
def two_partitions_one_transaction(ctx: Ctx) -> Any:
    t = ctx.create_topic("t", 2)
    tid, pid, epoch = _begin(ctx, t)
    add = ctx.add_partitions(tid, pid, epoch, t, [0, 1])
    ctx.produce(t, ["a"], partition=0, pid=pid, epoch=epoch, seq=0, txn_id=tid)
    ctx.produce(t, ["b"], partition=1, pid=pid, epoch=epoch, seq=0, txn_id=tid)
    desc = _describe(ctx, tid)
    end = ctx.end_txn(tid, pid, epoch, True)
    ctx.wait_lso(t, 2, 0)
    ctx.wait_lso(t, 2, 1)
    return {
        "add": add,
        "describe": desc,
        "end": end,
        "p0": ctx.fetch(t, 0, isolation=1)["records"],
        "p1": ctx.fetch(t, 0, partition=1, isolation=1)["records"],
    }


@scenario(AREA)
def list_and_describe_transactions(ctx: Ctx) -> Any:
    t, tid, pid, epoch = _topic_and_producer(ctx)
    ctx.add_partitions(tid, pid, epoch, t)
    resp = ctx.call(66, {"state_filters": ["Ongoing"], "producer_id_filters": [pid]})
    listed = [
        [x.transactional_id, x.transaction_state]
        for x in resp.transaction_states
        if x.transactional_id == tid
    ]
    out = {"list_ongoing": listed, "describe": _describe(ctx, tid)}
    out["describe_unknown"] = _describe(ctx, ctx.name("none"))
    ctx.end_txn(tid, pid, epoch, False)
    return out


@scenario(AREA)
def describe_producers(ctx: Ctx) -> Any:
    t = ctx.create_topic("t")
    _, pid, epoch = ctx.init_pid()
    ctx.produce(t, ["a", "b"], pid=pid, epoch=epoch, seq=0)
    tid, tpid, tepoch = _begin(ctx, t)
    ctx.add_partitions(tid, tpid, tepoch, t)
    ctx.produce(t, ["c"], pid=tpid, epoch=tepoch, seq=0, txn_id=tid)
    resp = ctx.call(61, {"topics": [{"name": t, "partition_indexes": [0, 7]}]})
    parts = []
    for p in resp.topics[0].partitions:
        parts.append(
            {
                "partition": int(p.partition_index),
                "error": plain(p.error_code, "error_code"),
                "producers": sorted(
                    [int(a.producer_epoch), int(a.last_sequence), int(a.current_txn_start_offset)]
                    for a in p.active_producers
                ),
            }
        )
    ctx.end_txn(tid, tpid, tepoch, False)
    return sorted(parts, key=lambda p: p["partition"])


@scenario(AREA)
def txn_offset_commit(ctx: Ctx) -> Any:
    t = ctx.create_topic("t")
    group = ctx.name("g")
    ctx.find_coordinator(group, 0)
    tid, pid, epoch = _begin(ctx, t)
    add = ctx.call(
        25,
        {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": group},
    )
    commit = ctx.call(
        28,
        {
            "transactional_id": tid,
            "group_id": group,
            "producer_id": pid,
            "producer_epoch": epoch,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": t,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 7,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "m",
                        }
                    ],
                }
            ],
        },
    )

    def fetch_offsets(stable: bool) -> Any:
        resp = ctx.call(
            9,
            {
                "groups": [
                    {
                        "group_id": group,
                        "member_id": None,
                        "member_epoch": -1,
                        "topics": [{"name": t, "partition_indexes": [0]}],
                    }
                ],
                "require_stable": stable,
            },
        )
        return plain(resp.groups[0])

    pending = fetch_offsets(True)
    end = ctx.end_txn(tid, pid, epoch, True)
    deadline = time.monotonic() + 10
    after = fetch_offsets(True)
    while "UNSTABLE_OFFSET_COMMIT" in str(after) and time.monotonic() < deadline:
        time.sleep(0.05)
        after = fetch_offsets(True)
    return {
        "add_offsets": plain(add.error_code, "error_code"),
        "txn_commit": plain(commit.topics[0].partitions[0].error_code, "error_code"),
        "pending_require_stable": pending,
        "end": end,
        "after": after,
    }


def _txn_commit_body(tid: str, group: str, pid: int, epoch: int, topics: Any) -> dict[str, Any]:
    return {
        "transactional_id": tid,
        "group_id": group,
        "producer_id": pid,
        "producer_epoch": epoch,
        "generation_id": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": name,
                "partitions": [
                    {
                        "partition_index": index,
                        "committed_offset": 3,
                        "committed_leader_epoch": -1,
                        "committed_metadata": None,
                    }
                    for index in indexes
                ],
            }
            for name, indexes in topics
        ],
    }


@scenario(AREA)
def txn_offset_commit_unknown_topic_or_partition(ctx: Ctx) -> Any:
    """TxnOffsetCommit naming a topic that does not exist and a partition past the topic's
    count, beside a partition that exists; then what the group holds once committed."""
    t = ctx.create_topic("t")
    group = ctx.name("g")
    ctx.find_coordinator(group, 0)
    tid, pid, epoch = _begin(ctx, t)
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch}
    add = ctx.call(25, {**body, "group_id": group})
    missing = ctx.name("none")
    commit = ctx.call(28, _txn_commit_body(tid, group, pid, epoch, [(t, [0, 4]), (missing, [0])]))
    answers = sorted(
        [str(topic.name) == t, int(p.partition_index), plain(p.error_code, "error_code")]
        for topic in commit.topics
        for p in topic.partitions
    )
    end = ctx.end_txn(tid, pid, epoch, True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        resp = ctx.call(
            9,
            {
                "groups": [
                    {
                        "group_id": group,
                        "member_id": None,
                        "member_epoch": -1,
                        "topics": [
                            {"name": t, "partition_indexes": [0, 4]},
                            {"name": missing, "partition_indexes": [0]},
                        ],
                    }
                ],
                "require_stable": True,
            },
        )
        if "UNSTABLE_OFFSET_COMMIT" not in str(plain(resp.groups[0])):
            break
        time.sleep(0.05)
    fetched = sorted(
        [str(topic.name) == t, int(p.partition_index), int(p.committed_offset)]
        for topic in resp.groups[0].topics
        for p in topic.partitions
    )
    return {
        "add_offsets": plain(add.error_code, "error_code"),
        "commit": answers,
        "end": end,
        "fetched": fetched,
    }


def _producers_on_offsets_topic(ctx: Ctx, pid: int) -> list[list[Any]]:
    """``pid``'s entries in DescribeProducers over every ``__consumer_offsets`` partition (the
    partition holding a group differs: Kafka hashes the group id, sharetxn keeps one)."""
    meta = ctx.call(3, {"topics": [{"name": "__consumer_offsets"}]})
    count = len(meta.topics[0].partitions)
    resp = ctx.call(
        61, {"topics": [{"name": "__consumer_offsets", "partition_indexes": list(range(count))}]}
    )
    return sorted(
        [
            plain(p.error_code, "error_code"),
            int(a.producer_epoch),
            int(a.last_sequence),
            int(a.coordinator_epoch) >= 0,
            int(a.current_txn_start_offset) >= 0,
            int(a.last_timestamp) > 0,
        ]
        for p in resp.topics[0].partitions
        for a in p.active_producers
        if int(a.producer_id) == pid
    )


@scenario(AREA)
def describe_producers_of_transactional_offset_commits(ctx: Ctx) -> Any:
    """DescribeProducers on ``__consumer_offsets`` shows the producer of an open transactional
    offset commit (``kafka-transactions.sh find-hanging`` looks there), then after its end."""
    t = ctx.create_topic("t")
    group = ctx.name("g")
    ctx.find_coordinator(group, 0)
    tid, pid, epoch = _begin(ctx, t)
    out: dict[str, Any] = {"before": _producers_on_offsets_topic(ctx, pid)}
    add = ctx.call(
        25,
        {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": group},
    )
    out["add_offsets"] = plain(add.error_code, "error_code")
    ctx.call(28, _txn_commit_body(tid, group, pid, epoch, [(t, [0])]))
    out["open"] = _producers_on_offsets_topic(ctx, pid)
    out["end"] = ctx.end_txn(tid, pid, epoch, True)
    deadline = time.monotonic() + 10
    done = _producers_on_offsets_topic(ctx, pid)
    while any(row[4] for row in done) and time.monotonic() < deadline:
        time.sleep(0.05)
        done = _producers_on_offsets_topic(ctx, pid)
    out["ended"] = done
    return out


def _write_markers(ctx: Ctx, pid: int, epoch: int, coordinator_epoch: int, parts: Any) -> Any:
    """WriteTxnMarkers(ABORT) from a client, as ``Admin.abortTransaction`` sends it."""
    resp = ctx.call(
        27,
        {
            "markers": [
                {
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "transaction_result": False,
                    "coordinator_epoch": coordinator_epoch,
                    "topics": [{"name": name, "partition_indexes": ps} for name, ps in parts],
                }
            ]
        },
    )
    return sorted(
        [str(t.name), int(p.partition_index), plain(p.error_code, "error_code")]
        for m in resp.markers
        for t in m.topics
        for p in t.partitions
    )


def _producer_on(ctx: Ctx, t: str, pid: int) -> list[Any]:
    resp = ctx.call(61, {"topics": [{"name": t, "partition_indexes": [0]}]})
    return [
        [int(a.producer_epoch), int(a.last_sequence), int(a.current_txn_start_offset)]
        for a in resp.topics[0].partitions[0].active_producers
        if int(a.producer_id) == pid
    ]


@scenario(AREA)
def write_txn_markers_from_a_client(ctx: Ctx) -> Any:
    """An administrator aborts an open transaction on a partition with WriteTxnMarkers
    (``kafka-transactions.sh abort``): the marker is written, read_committed readers move
    past it; a stale epoch, an unknown topic and partition are refused."""
    t = ctx.create_topic("t")
    ctx.produce(t, ["before"])
    tid, pid, epoch = _begin(ctx, t)
    ctx.add_partitions(tid, pid, epoch, t)
    ctx.produce(t, ["open"], pid=pid, epoch=epoch, seq=0, txn_id=tid)
    out: dict[str, Any] = {"open": _producer_on(ctx, t, pid)}
    out["lso_open"] = ctx.fetch(t, 0, isolation=1)
    resp = ctx.call(61, {"topics": [{"name": t, "partition_indexes": [0]}]})
    (coordinator_epoch,) = [
        int(a.coordinator_epoch)
        for a in resp.topics[0].partitions[0].active_producers
        if int(a.producer_id) == pid
    ]
    out["abort"] = _write_markers(ctx, pid, epoch, coordinator_epoch, [(t, [0])])
    ctx.wait_lso(t, 3)
    out["after"] = _producer_on(ctx, t, pid)
    out["read_committed"] = ctx.fetch(t, 0, isolation=1)
    out["unknown"] = _write_markers(
        ctx, pid, epoch, coordinator_epoch, [(t, [3]), (ctx.name("none"), [0])]
    )
    # A newer epoch of the producer on the partition: a marker of the older one is refused.
    _, pid2, epoch2 = ctx.init_pid(tid, pid=pid, epoch=epoch)
    ctx.add_partitions(tid, pid2, epoch2, t)
    ctx.produce(t, ["next"], pid=pid2, epoch=epoch2, seq=0, txn_id=tid)
    out["stale_epoch"] = _write_markers(ctx, pid2, epoch2 - 1, coordinator_epoch, [(t, [0])])
    out["end"] = ctx.end_txn(tid, pid2, epoch2, False)
    return out


def _coordinator_epoch_on(ctx: Ctx, t: str, pid: int) -> list[int]:
    resp = ctx.call(61, {"topics": [{"name": t, "partition_indexes": [0]}]})
    return [
        int(a.coordinator_epoch)
        for a in resp.topics[0].partitions[0].active_producers
        if int(a.producer_id) == pid
    ]


@scenario(AREA)
def markers_keep_the_coordinator_epoch(ctx: Ctx) -> Any:
    """A partition keeps the coordinator epoch of the last marker it took: DescribeProducers
    shows it after a commit; a client's WriteTxnMarkers naming an older one is refused
    (TRANSACTION_COORDINATOR_FENCED), the same or a newer one is taken."""
    t, tid, pid, epoch = _topic_and_producer(ctx, "before")
    ctx.add_partitions(tid, pid, epoch, t)
    ctx.produce(t, ["in"], pid=pid, epoch=epoch, seq=0, txn_id=tid)
    out: dict[str, Any] = {"open": _coordinator_epoch_on(ctx, t, pid)}
    out["end"] = ctx.end_txn(tid, pid, epoch, True)
    out["lso"] = ctx.wait_lso(t, 3)
    out["committed"] = committed = _coordinator_epoch_on(ctx, t, pid)
    (current,) = committed
    out["older"] = _write_markers(ctx, pid, epoch, current - 1, [(t, [0])])
    out["same"] = _write_markers(ctx, pid, epoch, current, [(t, [0])])
    out["newer"] = _write_markers(ctx, pid, epoch, current + 2, [(t, [0])])
    out["after_newer"] = [e - current for e in _coordinator_epoch_on(ctx, t, pid)]
    out["previous_now_older"] = _write_markers(ctx, pid, epoch, current + 1, [(t, [0])])
    return out


@scenario(AREA)
def offsets_partition_keeps_the_coordinator_epoch(ctx: Ctx) -> Any:
    """The ``__consumer_offsets`` partition holding a transactional offset commit keeps its
    marker's coordinator epoch: a client's WriteTxnMarkers naming an older one is refused
    (TRANSACTION_COORDINATOR_FENCED), the same one is taken.  (Which partition holds it
    differs: Kafka hashes the group id.)"""
    t = ctx.create_topic("t")
    group = ctx.name("g")
    ctx.find_coordinator(group, 0)
    tid, pid, epoch = _begin(ctx, t)
    ctx.call(
        25,
        {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": group},
    )
    ctx.call(28, _txn_commit_body(tid, group, pid, epoch, [(t, [0])]))
    out: dict[str, Any] = {"end": ctx.end_txn(tid, pid, epoch, True)}
    deadline = time.monotonic() + 10
    while any(row[4] for row in _producers_on_offsets_topic(ctx, pid)):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    meta = ctx.call(3, {"topics": [{"name": "__consumer_offsets"}]})
    count = len(meta.topics[0].partitions)
    resp = ctx.call(
        61, {"topics": [{"name": "__consumer_offsets", "partition_indexes": list(range(count))}]}
    )
    held = [
        (int(p.partition_index), int(a.coordinator_epoch))
        for p in resp.topics[0].partitions
        for a in p.active_producers
        if int(a.producer_id) == pid
    ]
    out["held"] = len(held)
    ((partition, current),) = held
    parts = [("__consumer_offsets", [partition])]

    def errors(coordinator_epoch: int) -> list[Any]:
        return [row[2] for row in _write_markers(ctx, pid, epoch, coordinator_epoch, parts)]

    out["older"] = errors(current - 1)
    out["same"] = errors(current)
    return out


@scenario(AREA)
def update_features_all_or_nothing(ctx: Ctx) -> Any:
    """UpdateFeatures (validate-only: the suite's Kafka is shared) of ``group.version``, whose
    level both finalize at 1: the current level is accepted; a level not supported, a negative
    one or an unknown feature fails the whole request (INVALID_UPDATE_VERSION)."""

    def update(*updates: tuple[str, int]) -> Any:
        resp = ctx.call(
            57,
            {
                "timeout": datetime.timedelta(seconds=30),
                "validate_only": True,
                "feature_updates": [
                    {"feature": f, "max_version_level": level, "upgrade_type": 1}
                    for f, level in updates
                ],
            },
            version=1,
        )
        return plain(resp)

    return {
        "current": update(("group.version", 1)),
        "unsupported": update(("group.version", 1), ("group.version", 2)),
        "negative": update(("group.version", -1)),
        "unknown": update(("no.such.version", 1)),
    }
