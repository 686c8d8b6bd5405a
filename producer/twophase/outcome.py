"""How a transaction really ended, read back from the markers in its partitions.

Fencing a transactional id (InitProducerId) aborts the transaction it finds open, but the
client may commit it between the tool's compare-and-set and the fence: the coordinator then
waits for the commit and only bumps the epoch. DescribeTransactions cannot tell the two apart
afterwards (both leave the id Empty at a higher epoch), so the tool notes where the
transaction starts in each partition before it fences, and afterwards reads the control
batch the coordinator wrote there for that producer id: COMMIT or ABORT.
"""

from __future__ import annotations

import functools
import struct
import time
from collections.abc import Mapping

from producer.admin import Admin
from producer.consumer.group_consumer import FETCH_NAMES_MAX_VERSION, LATEST, READ_UNCOMMITTED
from producer.protocol.client import check_error
from producer.protocol.records import CorruptRecordError, split_batches
from producer.twophase.model import TxnSnapshot
from txn.api_keys import ApiKey
from txn.batch import ControlType, control_type_of
from txn.ids import TopicPartition

_FETCH_MAX_BYTES = 1 << 20


def marker_starts(admin: Admin, snapshot: TxnSnapshot) -> dict[TopicPartition, int]:
    """Per partition of ``snapshot``: the offset to read the transaction's marker from.

    The open transaction's first offset (DescribeProducers) where the producer wrote data,
    else the partition's end: a marker written later lies at or after either. Internal
    topics (``__share_group_state`` for KIP-1289 acknowledgements, ``__consumer_offsets``)
    are left out: clients do not read them, and every marker of one transaction agrees.
    """
    starts: dict[TopicPartition, int] = {}
    for tp in snapshot.partitions:
        if tp.topic.startswith("__"):
            continue
        first = [
            p.current_txn_start_offset
            for p in admin.describe_producers(tp)
            if p.producer_id == snapshot.producer_id and p.current_txn_start_offset >= 0
        ]
        starts[tp] = first[0] if first else admin.list_offsets(tp, LATEST)
    return starts


def ended_as(
    admin: Admin,
    starts: Mapping[TopicPartition, int],
    producer_id: int,
    *,
    timeout_s: float,
    poll_interval_s: float = 0.1,
) -> ControlType | None:
    """The marker ``producer_id`` got in the first of ``starts`` that has one; None if none
    appeared within ``timeout_s`` (or the transaction had no partitions)."""
    deadline = time.monotonic() + timeout_s
    while starts:
        for tp, start in sorted(starts.items()):
            found = _first_marker(admin, tp, producer_id, start)
            if found is not None:
                return found
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll_interval_s)
    return None


def _first_marker(
    admin: Admin, tp: TopicPartition, producer_id: int, offset: int
) -> ControlType | None:
    """Read ``tp`` from ``offset`` to its high watermark for ``producer_id``'s first marker."""
    client = admin.client
    node = client.call(lambda: client.leader_for(tp))
    while True:
        body = _fetch_body(tp, offset)
        resp = client.call(
            functools.partial(
                client.send, node, ApiKey.FETCH, body, max_version=FETCH_NAMES_MAX_VERSION
            )
        )
        parts = [p for t in resp.responses for p in t.partitions]
        if len(parts) != 1:
            msg = f"Fetch of {tp.topic}-{tp.partition} answered {len(parts)} partitions"
            raise CorruptRecordError(msg)
        check_error(parts[0].error_code, topic=tp.topic, partition=tp.partition)
        raw = bytes(parts[0].records or b"")
        batches = split_batches(raw)
        for pos, header in batches:
            if header.is_control and header.producer_id == producer_id:
                try:
                    return control_type_of(raw, pos, header)
                except (IndexError, ValueError, struct.error) as exc:
                    msg = f"unreadable marker at {tp.topic}-{tp.partition}@{header.base_offset}"
                    raise CorruptRecordError(msg) from exc
        after = batches[-1][1].last_offset + 1 if batches else offset
        if after <= offset or after >= int(parts[0].high_watermark):
            return None  # read to the end (or a leader that does not advance: nothing more)
        offset = after


def _fetch_body(tp: TopicPartition, offset: int) -> dict[str, object]:
    return {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": _FETCH_MAX_BYTES,
        "isolation_level": READ_UNCOMMITTED,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": tp.topic,
                "partitions": [
                    {
                        "partition": tp.partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": _FETCH_MAX_BYTES,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
