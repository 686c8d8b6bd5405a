"""The simulated marker channel's stale copies: held until the producer moved on, then applied."""

from __future__ import annotations

import random

import pytest

from chaos.sim_loop import IncarnationClock, SimLoop
from chaos.sim_net import FaultyMarkerChannel, MarkerFaults
from coordinator.marker_channel import MarkerResponse, TxnMarker
from txn.batch import ControlType
from txn.errors import ErrorCode
from txn.ids import TopicPartition

pytestmark = pytest.mark.chaos

TP = TopicPartition("out", 0)
MARKER = TxnMarker("w0", 7, 3, 0, ControlType.COMMIT, (TP,))


class Handler:
    def __init__(self) -> None:
        self.applied: list[TxnMarker] = []

    def write_txn_markers(self, marker: TxnMarker) -> dict[TopicPartition, ErrorCode]:
        self.applied.append(marker)
        return dict.fromkeys(marker.partitions, ErrorCode.NONE)


def _channel(
    loop: SimLoop, handler: Handler, faults: MarkerFaults, moved_on: list[bool]
) -> tuple[FaultyMarkerChannel, list[str]]:
    seen: list[str] = []

    def run(work: object) -> None:
        work()  # type: ignore[operator]

    channel = FaultyMarkerChannel(
        IncarnationClock(loop, run),
        handler,
        random.Random(1),
        lambda: faults,
        lambda _marker, _response, how: seen.append(how),
        stale_gate=lambda _marker: moved_on[0],
    )
    return channel, seen


def test_a_stale_copy_waits_until_the_producer_moved_on_then_lands_once() -> None:
    loop = SimLoop(0)
    handler = Handler()
    moved_on = [False]
    channel, seen = _channel(loop, handler, MarkerFaults(stale=1.0, stale_ms=4000), moved_on)
    answers: list[MarkerResponse] = []
    channel.deliver(MARKER, answers.append)
    assert seen == ["direct"] and len(answers) == 1
    loop.run_until(500)
    assert seen == ["direct"]  # held: the producer is still at the marker's epoch
    moved_on[0] = True
    loop.run_until(10_000)
    assert seen == ["direct", "stale"]
    assert handler.applied == [MARKER, MARKER]
    assert len(answers) == 1  # nobody hears the stale copy's answer


def test_a_stale_copy_is_dropped_if_the_producer_never_moves_on() -> None:
    loop = SimLoop(0)
    handler = Handler()
    channel, seen = _channel(loop, handler, MarkerFaults(stale=1.0, stale_ms=4000), [False])
    channel.deliver(MARKER, lambda _response: None)
    loop.run_until(60_000)
    assert seen == ["direct"]
    assert loop.next_due() is None  # it stopped polling at its deadline
