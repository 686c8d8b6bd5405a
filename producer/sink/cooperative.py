"""Connect's incremental cooperative protocols (KIP-415): ``compatible`` and ``sessioned``.

A worker joins with its current allocation in its metadata (ConnectProtocol v1, v2 for
``sessioned``: ``url``, ``config_offset``, ``allocation``).  The leader answers each worker
with what it gains (``assignment``), what it must give up (``revoked``) and a ``delay``;
nothing else stops.  ``CooperativeAssignor`` is the leader's side, as Connect's
``IncrementalCooperativeAssignor``:

- what a worker runs that no config names any more is revoked;
- what was assigned to a worker that left (``lost``) waits up to
  ``scheduled.rebalance.max.delay.ms`` for it to come back: the answer carries the time
  left as ``delay``, the workers rejoin then, and what is still lost goes to the others;
- a worker holding more than its share (connectors and tasks each counted apart) gives the
  excess up, unless the previous round already revoked something (the revoked items are
  assigned on the next round, once given up);
- what nobody runs goes, connectors first, then tasks, to the least loaded workers.

An item is ``(connector, task)``, ``CONNECTOR_TASK`` (-1) standing for the connector itself.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from producer.sink.connect_protocol import CONNECTOR_TASK, WireReader, pack_string

__all__ = [
    "COMPATIBLE",
    "DEFAULT",
    "EAGER",
    "PROTOCOLS",
    "SESSIONED",
    "CoopAssignment",
    "CoopMetadata",
    "CooperativeAssignor",
    "Item",
    "decode_coop_assignment",
    "decode_coop_metadata",
    "encode_coop_assignment",
    "encode_coop_metadata",
    "items_of",
    "tasks_of",
]

Item = tuple[str, int]

DEFAULT: Final = "default"  # eager, ConnectProtocol v0
COMPATIBLE: Final = "compatible"  # v1
SESSIONED: Final = "sessioned"  # v2: v1 and session keys (KIP-507)
EAGER: Final = "eager"  # connect.protocol's name for ``default``
#: connect.protocol -> the protocols a worker offers, in its order of preference
PROTOCOLS: Final = {
    EAGER: (DEFAULT,),
    COMPATIBLE: (COMPATIBLE, DEFAULT),
    SESSIONED: (SESSIONED, COMPATIBLE, DEFAULT),
}
VERSIONS: Final = {DEFAULT: 0, COMPATIBLE: 1, SESSIONED: 2}


def items_of(tasks: Mapping[str, Iterable[int]]) -> set[Item]:
    return {(name, task) for name, ids in tasks.items() for task in ids}


def tasks_of(items: Iterable[Item]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for name, task in sorted(items):
        out.setdefault(name, []).append(task)
    return out


def _items_bytes(items: set[Item] | None) -> bytes:
    if items is None:
        return struct.pack(">i", -1)
    grouped = tasks_of(items)
    out = struct.pack(">i", len(grouped))
    for name, ids in grouped.items():
        out += pack_string(name) + struct.pack(f">i{len(ids)}i", len(ids), *ids)
    return out


def _read_items(r: WireReader) -> set[Item]:
    count = r.take(">i")
    out: set[Item] = set()
    for _ in range(max(count, 0)):
        name = r.string()
        out.update((name, r.take(">i")) for _ in range(r.take(">i")))
    return out


@dataclass(frozen=True, slots=True)
class CoopAssignment:
    error: int
    leader: str
    leader_url: str
    config_offset: int
    assigned: set[Item] = field(default_factory=set)
    revoked: set[Item] = field(default_factory=set)
    delay_ms: int = 0


def encode_coop_assignment(a: CoopAssignment, version: int) -> bytes:
    return (
        struct.pack(">hh", version, a.error)
        + pack_string(a.leader)
        + pack_string(a.leader_url)
        + struct.pack(">q", a.config_offset)
        + _items_bytes(a.assigned)
        + _items_bytes(a.revoked)
        + struct.pack(">i", a.delay_ms)
    )


def decode_coop_assignment(data: bytes) -> CoopAssignment:
    r = WireReader(data)
    r.take(">h")
    error = r.take(">h")
    leader, leader_url = r.string(), r.string()
    offset = r.take(">q")
    assigned, revoked = _read_items(r), _read_items(r)
    return CoopAssignment(error, leader, leader_url, offset, assigned, revoked, r.take(">i"))


@dataclass(frozen=True, slots=True)
class CoopMetadata:
    url: str
    config_offset: int
    #: what the worker runs now (None: it has no assignment yet)
    allocation: set[Item] | None = None


def encode_coop_metadata(meta: CoopMetadata, version: int) -> bytes:
    out = struct.pack(">h", version) + pack_string(meta.url) + struct.pack(">q", meta.config_offset)
    if meta.allocation is None:
        return out + struct.pack(">i", -1)
    body = encode_coop_assignment(CoopAssignment(0, "", "", -1, meta.allocation), version)
    return out + struct.pack(">i", len(body)) + body


def decode_coop_metadata(data: bytes) -> CoopMetadata:
    r = WireReader(data)
    r.take(">h")
    url = r.string()
    offset = r.take(">q")
    size = r.take(">i") if r.pos < len(data) else -1
    if size < 0:
        return CoopMetadata(url, offset, None)
    allocation = decode_coop_assignment(data[r.pos : r.pos + size]).assigned
    return CoopMetadata(url, offset, allocation)


class CooperativeAssignor:
    """The leader's incremental cooperative assignment; ``now_ms`` comes from the caller
    (a manual clock in tests)."""

    def __init__(self, max_delay_ms: int) -> None:
        self.max_delay_ms = max_delay_ms
        self.previous: dict[Item, str] = {}  # item -> the member's url, last round
        self.deadline_ms: int | None = None
        self.revoked_last = False

    def assign(
        self, members: Mapping[str, CoopMetadata], configured: Mapping[str, int], now_ms: int
    ) -> tuple[dict[str, tuple[set[Item], set[Item]]], int]:
        """member -> (assigned, revoked), and the delay (ms) before the next rebalance."""
        wanted: set[Item] = set()
        for name, count in configured.items():
            wanted.add((name, CONNECTOR_TASK))
            wanted.update((name, t) for t in range(count))
        ids = sorted(members)
        urls = {m: members[m].url for m in ids}
        active: dict[str, set[Item]] = {m: set(members[m].allocation or ()) for m in ids}
        revoked: dict[str, set[Item]] = {m: set() for m in ids}
        # deleted connectors and tasks, and duplicates (kept by the first member only)
        seen: set[Item] = set()
        for m in ids:
            for item in sorted(active[m]):
                if item not in wanted or item in seen:
                    revoked[m].add(item)
                seen.add(item)
            active[m] -= revoked[m]
        running = set().union(*active.values()) if ids else set()
        # lost: last round's items of workers no longer here
        here = set(urls.values())
        lost = {
            item
            for item, url in self.previous.items()
            if url not in here and item in wanted and item not in running
        }
        delay = 0
        held: set[Item] = set()
        if lost and self.max_delay_ms > 0:
            if self.deadline_ms is None:
                self.deadline_ms = now_ms + self.max_delay_ms
            if now_ms < self.deadline_ms:
                held = lost
                delay = self.deadline_ms - now_ms
            else:
                self.deadline_ms = None
        elif not lost:
            self.deadline_ms = None
        unassigned = wanted - running - held
        # load balancing: give up the excess, assigned on the next round
        balanced_now = False
        if ids and not self.revoked_last and not any(revoked.values()) and not held:
            for connectors in (True, False):
                total = sum(1 for i in wanted if (i[1] == CONNECTOR_TASK) == connectors)
                mine = {
                    m: sorted(i for i in active[m] if (i[1] == CONNECTOR_TASK) == connectors)
                    for m in ids
                }
                floor, extra = divmod(total, len(ids))
                by_load = sorted(ids, key=lambda m: (-len(mine[m]), m))
                for rank, m in enumerate(by_load):
                    target = floor + (1 if rank < extra else 0)
                    for item in mine[m][target:]:
                        revoked[m].add(item)
                        active[m].discard(item)
                        balanced_now = True
            if balanced_now:
                unassigned = set()
        self.revoked_last = any(revoked.values())
        assigned: dict[str, set[Item]] = {m: set() for m in ids}
        if ids:
            for connectors in (True, False):
                todo = sorted(i for i in unassigned if (i[1] == CONNECTOR_TASK) == connectors)
                for item in todo:

                    def load(m: str, connectors: bool = connectors) -> tuple[int, str]:
                        owned = active[m] | assigned[m]
                        return (
                            sum(1 for i in owned if (i[1] == CONNECTOR_TASK) == connectors),
                            m,
                        )

                    assigned[min(ids, key=load)].add(item)
        self.previous = {item: urls[m] for m in ids for item in active[m] | assigned[m]} | {
            item: url for item, url in self.previous.items() if item in held
        }
        return {m: (assigned[m], revoked[m]) for m in ids}, delay
