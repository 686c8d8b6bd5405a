"""The independent end of ``sharetxn chaos real``: what the broker holds once the clients stopped.

The output is read by a **stock** ``confluent_kafka.Consumer`` with
``isolation.level=read_committed`` (librdkafka, not our client library), the input by a stock
consumer too; the share group's start offsets (SPSO), the transactions and the pending share
acknowledgements come from our ``Admin`` (DescribeShareGroupOffsets, ListTransactions and the
KIP-1289 pending-acks view).  ``final_events`` turns them into the ``final`` events the checker
reads; ``direct_checks`` judges them on their own:

* **R1** every input value is in the committed output exactly once (no duplicate);
* **R2** nothing lost: every input value is in the committed output;
* **R3** the share group acknowledged everything: each input partition's SPSO is at its end;
* **R4** no transaction is left open and no share acknowledgement is pending.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from chaos.checker import Violation
from chaos.history import parse_output
from producer.admin import Admin
from txn.ids import TopicPartition as Tp

IDLE_STATES = frozenset({"Empty", "CompleteCommit", "CompleteAbort", "Dead"})
DIRECT_NAMES: dict[str, str] = {
    "R1": "exactly once (stock read_committed consumer)",
    "R2": "nothing lost (stock read_committed consumer)",
    "R3": "share group acknowledged everything (SPSO at the end)",
    "R4": "no open transaction, no pending share acknowledgement",
}

_QUIET = logging.getLogger("sharetxn.chaos.real.librdkafka")
_QUIET.setLevel(logging.CRITICAL)
_QUIET.propagate = False


@dataclass
class FinalState:
    """Everything read after the drain."""

    inputs: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    outputs: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    lso: dict[int, tuple[int, int]] = field(default_factory=dict)  # output p -> (LSO, HW)
    spso: dict[int, tuple[int, int]] = field(default_factory=dict)  # input p -> (SPSO, end)
    txns: dict[str, str] = field(default_factory=dict)  # transactional id -> state
    pending_acks: dict[int, int] = field(default_factory=dict)  # producer id -> records


def read_topic(
    bootstrap: str, topic: str, ends: dict[int, int], isolation: str, timeout_s: float = 60.0
) -> dict[int, list[tuple[int, str]]]:
    """Every record of ``topic`` below ``ends[p]`` (stock consumer): p -> [(offset, value)]."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"chaos-real-verify-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "fetch.wait.max.ms": 50,
            "logger": _QUIET,
        }
    )
    out: dict[int, list[tuple[int, str]]] = {p: [] for p in ends}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        done = {p: ends[p] <= 0 for p in ends}
        deadline = time.monotonic() + timeout_s
        while not all(done.values()) and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.2):
                if msg.error() is not None:
                    continue
                p, offset = int(msg.partition() or 0), int(msg.offset() or 0)
                if offset < ends[p]:
                    out[p].append((offset, (msg.value() or b"").decode("utf-8", "replace")))
            for tp in consumer.position([TopicPartition(topic, p) for p in ends]):
                if tp.offset >= ends[tp.partition]:
                    done[tp.partition] = True
        if not all(done.values()):
            short = sorted(p for p, d in done.items() if not d)
            text = f"could not read {topic} partitions {short} to their end in {timeout_s:.0f} s"
            raise TimeoutError(text)
    finally:
        consumer.close()
    return out


def read_state(
    admin: Admin, input_topic: str, output_topic: str, group: str, tids: set[str]
) -> FinalState:
    """Offsets, LSOs, transactions and pending acks (no records): the drain's quiescence check."""
    state = FinalState()
    partitions = admin.list_topics()
    ends = {p: admin.list_offsets(Tp(input_topic, p), -1) for p in partitions[input_topic]}
    for tp, progress in admin.share_group_progress(group, [input_topic]).items():
        state.spso[tp.partition] = (progress, ends.get(tp.partition, 0))
    for p, end in ends.items():
        state.spso.setdefault(p, (-1, end))
    for p in partitions[output_topic]:
        tp = Tp(output_topic, p)
        state.lso[p] = (admin.list_offsets(tp, -1, read_committed=True), admin.list_offsets(tp, -1))
    state.txns = {
        t.transactional_id: t.state for t in admin.list_transactions() if t.transactional_id in tids
    }
    for pending in admin.describe_share_pending_acks():
        if pending.pending_records:
            state.pending_acks[pending.producer_id] = pending.pending_records
    return state


def read_final(
    bootstrap: str, admin: Admin, input_topic: str, output_topic: str, group: str, tids: set[str]
) -> FinalState:
    """``read_state`` plus every input record and every committed output record."""
    state = read_state(admin, input_topic, output_topic, group, tids)
    state.inputs = read_topic(
        bootstrap, input_topic, {p: end for p, (_s, end) in state.spso.items()}, "read_uncommitted"
    )
    state.outputs = read_topic(
        bootstrap, output_topic, {p: lso for p, (lso, _hw) in state.lso.items()}, "read_committed"
    )
    return state


def quiescent(state: FinalState) -> bool:
    """Nothing in flight: input consumed, transactions idle, LSOs at HW, no pending acks."""
    return (
        all(start >= end for start, end in state.spso.values())
        and all(s in IDLE_STATES for s in state.txns.values())
        and all(lso >= hw for lso, hw in state.lso.values())
        and not state.pending_acks
    )


def final_events(state: FinalState, is_quiescent: bool) -> list[tuple[str, dict[str, Any]]]:
    """The ``final`` events of the simulation's history, from the real broker."""
    return [
        (
            "input",
            {"partitions": {str(p): [list(r) for r in rs] for p, rs in state.inputs.items()}},
        ),
        (
            "output",
            {
                "committed": {str(p): [list(r) for r in rs] for p, rs in state.outputs.items()},
                "lso": {str(p): list(v) for p, v in state.lso.items()},
            },
        ),
        (
            "share",
            {
                "partitions": {
                    str(p): {
                        "start": start,
                        "end": end,
                        # Records at or above the SPSO are not acknowledged; their exact state
                        # is the broker's (not exposed), so they are only "not terminal".
                        "states": [[o, "UNACKNOWLEDGED", 0] for o in range(max(start, 0), end)],
                    }
                    for p, (start, end) in state.spso.items()
                },
                "open_txns": sorted(state.pending_acks),
            },
        ),
        (
            "txns",
            {
                "quiescent": is_quiescent,
                "txns": {tid: {"state": s} for tid, s in sorted(state.txns.items())},
            },
        ),
    ]


@dataclass
class DirectResult:
    outputs: int = 0
    duplicates: int = 0
    lost: int = 0
    violations: list[Violation] = field(default_factory=list)


def direct_checks(
    state: FinalState, expected: set[str], max_dc: dict[str, int], limit: int
) -> DirectResult:
    """R1-R4 on the final state alone (``max_dc``: highest delivery count a client saw)."""
    result = DirectResult()
    counts: Counter[str] = Counter()
    for records in state.outputs.values():
        for _offset, value in records:
            result.outputs += 1
            parsed = parse_output(value)
            counts[parsed[0] if parsed is not None else value] += 1
    twice = sorted(v for v, c in counts.items() if c > 1)
    result.duplicates = sum(counts[v] - 1 for v in twice)
    if twice:
        result.violations.append(
            Violation(
                "R1",
                f"{len(twice)} input value(s) are in the committed output more than once"
                f" ({result.duplicates} extra), e.g. {', '.join(twice[:5])}",
            )
        )
    missing = sorted(expected - set(counts), key=_natural)
    result.lost = len(missing)
    if missing:
        limit_hit = [v for v in missing if max_dc.get(v, 0) >= limit]
        note = f"; {len(limit_hit)} of them reached the delivery count limit" if limit_hit else ""
        result.violations.append(
            Violation(
                "R2",
                f"{len(missing)} input value(s) are not in the committed output, e.g."
                f" {', '.join(missing[:5])}{note}",
            )
        )
    behind = {p: v for p, v in sorted(state.spso.items()) if v[0] < v[1]}
    if behind:
        text = ", ".join(f"partition {p}: SPSO {s} < end {e}" for p, (s, e) in behind.items())
        result.violations.append(Violation("R3", f"records not acknowledged: {text}"))
    open_txns = {t: s for t, s in sorted(state.txns.items()) if s not in IDLE_STATES}
    if open_txns or state.pending_acks:
        result.violations.append(
            Violation(
                "R4",
                f"open transactions {open_txns or '{}'}; pending share acknowledgements by"
                f" producer id {state.pending_acks or '{}'}",
            )
        )
    return result


def _natural(value: str) -> tuple[str, int]:
    digits = "".join(ch for ch in value if ch.isdigit())
    return value.rstrip("0123456789"), int(digits or 0)


_QUIET_CLIENT = logging.getLogger("sharetxn.chaos.librdkafka")
_QUIET_CLIENT.setLevel(logging.CRITICAL)
_QUIET_CLIENT.propagate = False


def trickle_input(
    bootstrap: str,
    topic: str,
    records: int,
    seconds: float,
    *,
    partitions: int | None = None,
) -> str | None:
    """Write ``i0 .. i<records-1>`` in chunks of 20 spread over ``seconds`` (a stock
    idempotent producer), so faults land on work in flight; an error text if it failed.

    ``partitions``: value ``i`` goes to partition ``i % partitions``; else keyed by ``i``.
    """
    from confluent_kafka import Producer  # noqa: PLC0415 - a thread of the harness only

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "batch.num.messages": 20,
            "message.timeout.ms": 300000,
            "logger": _QUIET_CLIENT,
        }
    )
    chunk = 20
    pause = seconds / max(1, records // chunk)
    for i in range(records):
        if partitions is None:
            producer.produce(topic, f"i{i}".encode(), key=str(i).encode())
        else:
            producer.produce(topic, f"i{i}".encode(), partition=i % partitions)
        if i % chunk == chunk - 1:
            producer.poll(0)
            time.sleep(pause)
    if producer.flush(300) != 0:
        return "the input could not be written"
    return None
