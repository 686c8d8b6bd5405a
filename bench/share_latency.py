"""ShareFetch / ShareAcknowledge round-trip latency for ``bench/share.py``: a share-group member
driven with the project's wire client (``producer.protocol.client.KafkaClient``), one request
in flight; its timed cycles, their percentiles and their table.

A case here is ``bench/share.py``'s ``Case`` (kind "latency" or "rtt").
"""

from __future__ import annotations

import argparse
import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import toolkit  # bench/toolkit.py: the shared measurement plumbing
from rich.table import Table

ACCEPT = 1
HEARTBEAT_EVERY_S = 4.0  # the broker's default heartbeat interval is 5 s

Tick = Callable[[int], None]


@dataclass
class LatencySample(toolkit.Disturbable):
    """``cycles`` timed round trips: per cycle the fetch and ack time in seconds."""

    cycles: int
    records: int  # records acquired (and acknowledged) over all cycles
    seconds: float
    fetch_s: list[float]
    ack_s: list[float]
    broker_cpu_s: float
    client_cpu_s: float
    other_cpu_s: float


class RawMember:
    """One share-group member driven with the project's wire client, one request at a time."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        from producer.protocol.client import KafkaClient  # noqa: PLC0415
        from txn.ids import KEY_TYPE_GROUP  # noqa: PLC0415

        self.client = KafkaClient(bootstrap, client_id="bench-share")
        self.group = group
        self.member = str(uuid.uuid4())
        self.topic_id = self.client.topic(topic).topic_id
        self.partitions = self.client.topic(topic).partitions
        self.node = self.client.coordinator_for(KEY_TYPE_GROUP, group)
        self.topic = topic
        self.member_epoch = 0
        self.session_epoch = 0
        self.last_heartbeat = 0.0

    def heartbeat(self, leave: bool = False) -> None:
        resp = self.client.send(
            self.node,
            76,
            {
                "group_id": self.group,
                "member_id": self.member,
                "member_epoch": -1 if leave else self.member_epoch,
                "subscribed_topic_names": None if leave or self.member_epoch else [self.topic],
            },
        )
        if int(resp.error_code) != 0:
            raise toolkit.CheckFailed(f"ShareGroupHeartbeat: error {int(resp.error_code)}")
        if not leave:
            self.member_epoch = int(resp.member_epoch)
        self.last_heartbeat = time.monotonic()

    def fetch(self, max_records: int, max_bytes: int) -> Any:
        """A ShareFetch; the first one (epoch 0) opens the session with every partition."""
        opening = self.session_epoch == 0
        topics = (
            [
                {
                    "topic_id": self.topic_id,
                    "partitions": [
                        {"partition_index": p, "acknowledgement_batches": []}
                        for p in self.partitions
                    ],
                }
            ]
            if opening
            else []
        )
        resp = self.client.send(
            self.node,
            78,
            {
                "group_id": self.group,
                "member_id": self.member,
                "share_session_epoch": self.session_epoch,
                "max_wait": 500,
                "min_bytes": 1,
                "max_bytes": max_bytes,
                "max_records": max_records,
                "batch_size": max_records,
                "topics": topics,
            },
        )
        self.session_epoch += 1
        return resp

    def acknowledge(self, acquired: dict[int, list[tuple[int, int]]]) -> Any:
        resp = self.client.send(
            self.node,
            79,
            {
                "group_id": self.group,
                "member_id": self.member,
                "share_session_epoch": self.session_epoch,
                "topics": [
                    {
                        "topic_id": self.topic_id,
                        "partitions": [
                            {
                                "partition_index": p,
                                "acknowledgement_batches": [
                                    {
                                        "first_offset": f,
                                        "last_offset": la,
                                        "acknowledge_types": [ACCEPT],
                                    }
                                    for f, la in ranges
                                ],
                            }
                            for p, ranges in acquired.items()
                        ],
                    }
                ],
            },
        )
        self.session_epoch += 1
        return resp

    def api_versions(self) -> Any:
        return self.client.send(self.node, 18, {})

    def close(self) -> None:
        try:
            with contextlib.suppress(Exception):
                self.heartbeat(leave=True)
        finally:
            self.client.close()


def _acquired(resp: Any, label: str) -> tuple[dict[int, list[tuple[int, int]]], int]:
    """(partition -> acquired offset ranges, record count) of a ShareFetch response."""
    if int(resp.error_code) != 0:
        raise toolkit.CheckFailed(f"{label}: ShareFetch error {int(resp.error_code)}")
    out: dict[int, list[tuple[int, int]]] = {}
    count = 0
    for topic in resp.responses:
        for part in topic.partitions:
            if int(part.error_code) != 0:
                raise toolkit.CheckFailed(
                    f"{label}: ShareFetch partition {int(part.partition_index)} "
                    f"error {int(part.error_code)}"
                )
            for r in part.acquired_records:
                first, last = int(r.first_offset), int(r.last_offset)
                if int(r.delivery_count) != 1:
                    raise toolkit.CheckFailed(f"{label}: delivery count {int(r.delivery_count)}")
                out.setdefault(int(part.partition_index), []).append((first, last))
                count += last - first + 1
    return out, count


def _check_ack(resp: Any, label: str) -> None:
    errors = [int(resp.error_code)] + [
        int(p.error_code) for t in resp.responses for p in t.partitions
    ]
    if any(errors):
        raise toolkit.CheckFailed(f"{label}: ShareAcknowledge errors {errors}")


def measure_latency(
    case: Any, args: argparse.Namespace, pid: int | None, bootstrap: str, group: str, tick: Tick
) -> LatencySample:
    """``args.cycles`` timed ShareFetch + ShareAcknowledge cycles (kind "latency"), or
    ApiVersions requests (kind "rtt"), of one new member of ``group``."""
    member = RawMember(bootstrap, group, case.topic)
    fetch_s: list[float] = []
    ack_s: list[float] = []
    records = 0
    clock = time.perf_counter
    try:
        member.heartbeat()
        if case.kind == "rtt":
            member.api_versions()  # one untimed request first, like the opening fetch below
        else:
            # The opening fetch (epoch 0) and its ack are not timed: they create the share
            # partitions of the new group.
            acquired, _n = _acquired(member.fetch(case.max_records, case.max_bytes), case.label)
            _check_ack(member.acknowledge(acquired), case.label)
        cpu0 = toolkit.CpuSnapshot.take(pid)
        start = clock()
        for cycle in range(args.cycles):
            if time.monotonic() - member.last_heartbeat > HEARTBEAT_EVERY_S:
                member.heartbeat()  # rare, and not part of a timed cycle
            if case.kind == "rtt":
                t0 = clock()
                member.api_versions()
                fetch_s.append(clock() - t0)
                ack_s.append(0.0)
            else:
                t0 = clock()
                fetched = member.fetch(case.max_records, case.max_bytes)
                t1 = clock()
                acquired, n = _acquired(fetched, case.label)
                if not n:
                    raise toolkit.CheckFailed(
                        f"{case.label}: cycle {cycle}: ShareFetch acquired nothing"
                    )
                t2 = clock()
                acked = member.acknowledge(acquired)
                t3 = clock()
                _check_ack(acked, case.label)
                fetch_s.append(t1 - t0)
                ack_s.append(t3 - t2)
                records += n
            if not cycle % 16:
                tick(cycle)
        elapsed = clock() - start
        cpu1 = toolkit.CpuSnapshot.take(pid)
    finally:
        member.close()
    tick(args.cycles)
    usage = cpu0.usage(cpu1)
    return LatencySample(
        args.cycles, records, elapsed, fetch_s, ack_s, usage.broker, usage.client, usage.other
    )


def latency_summary(case: Any) -> dict[str, float]:
    kept = case.kept()
    fetch = [x for s in kept for x in s.fetch_s]
    ack = [x for s in kept for x in s.ack_s]
    cycle = [f + a for s in kept for f, a in zip(s.fetch_s, s.ack_s, strict=True)]
    cycles = sum(s.cycles for s in kept)
    return {
        "cycles": cycles,
        "records_per_cycle": sum(s.records for s in kept) / cycles,
        "fetch_p50_ms": toolkit.pct(fetch, 50) * 1000,
        "fetch_p99_ms": toolkit.pct(fetch, 99) * 1000,
        "ack_p50_ms": toolkit.pct(ack, 50) * 1000,
        "ack_p99_ms": toolkit.pct(ack, 99) * 1000,
        "cycle_p50_ms": toolkit.pct(cycle, 50) * 1000,
        "cycle_p99_ms": toolkit.pct(cycle, 99) * 1000,
        "broker_cpu_ms_per_cycle": sum(s.broker_cpu_s for s in kept) / cycles * 1000,
        "client_cpu_ms_per_cycle": sum(s.client_cpu_s for s in kept) / cycles * 1000,
        "other_cores_max": max(s.other_cores for s in kept),
    }


def latency_table(cases: list[Any]) -> Table:
    table = Table(title="ShareFetch + ShareAcknowledge round trips, ms (all cycles of the rounds)")
    table.add_column("case", no_wrap=True)
    table.add_column("rec/\ncycle", justify="right")
    table.add_column("fetch\np50", justify="right")
    table.add_column("fetch\np99", justify="right")
    table.add_column("ack\np50", justify="right")
    table.add_column("ack\np99", justify="right")
    table.add_column("cycle\np50", justify="right")
    table.add_column("cycle\np99", justify="right")
    table.add_column("broker CPU\nms/cycle", justify="right")
    table.add_column("client CPU\nms/cycle", justify="right")
    table.add_column("cycles", justify="right")
    table.add_column("other\ncores", justify="right")
    for case in cases:
        if not case.samples or case.kind not in ("latency", "rtt"):
            continue
        s = latency_summary(case)
        rtt = case.kind == "rtt"
        table.add_row(
            f"({case.key}) {case.label}",
            "-" if rtt else f"{s['records_per_cycle']:.0f}",
            f"{s['fetch_p50_ms']:.2f}",
            f"{s['fetch_p99_ms']:.2f}",
            "-" if rtt else f"{s['ack_p50_ms']:.2f}",
            "-" if rtt else f"{s['ack_p99_ms']:.2f}",
            f"{s['cycle_p50_ms']:.2f}",
            f"{s['cycle_p99_ms']:.2f}",
            f"{s['broker_cpu_ms_per_cycle']:.2f}",
            f"{s['client_cpu_ms_per_cycle']:.2f}",
            f"{s['cycles']:,}",
            f"{s['other_cores_max']:.2f}",
        )
    return table
