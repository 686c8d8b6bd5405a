"""MarkerChannel: asynchronous delivery, per-partition retries, stop rules, fault hooks."""

from __future__ import annotations

from collections.abc import Callable

from coordinator.marker_channel import MarkerChannel, MarkerResponse, TxnMarker
from tests.unit.coordinator.txn_harness import TP0, TP1, TP2, FakeMarkerHandler
from txn.batch import ControlType
from txn.clock import ManualClock
from txn.errors import ErrorCode

E = ErrorCode
BACKOFF = 100
TIMEOUT = 1000


def marker(tid: str = "t", partitions: tuple[object, ...] = (TP0, TP1, TP2)) -> TxnMarker:
    return TxnMarker(tid, 7, 3, 0, ControlType.COMMIT, partitions)  # type: ignore[arg-type]


class Completions:
    def __init__(self) -> None:
        self.done: list[str] = []

    def callback(self, name: str) -> Callable[[], None]:
        return lambda: self.done.append(name)


def new_channel(
    channel_type: type[MarkerChannel] = MarkerChannel,
) -> tuple[ManualClock, FakeMarkerHandler, MarkerChannel, Completions]:
    clock = ManualClock()
    handler = FakeMarkerHandler()
    channel = channel_type(clock, handler, retry_backoff_ms=BACKOFF, request_timeout_ms=TIMEOUT)
    return clock, handler, channel, Completions()


def test_delivery_is_asynchronous_and_completes() -> None:
    clock, handler, channel, completions = new_channel()
    channel.send(marker(), completions.callback("t"))
    assert handler.received == [] and channel.pending() == {"t": (TP2, TP0, TP1)}
    clock.run_due()
    assert handler.partitions_marked() == {TP0, TP1, TP2}
    assert completions.done == ["t"] and channel.pending() == {}


def test_retriable_errors_retry_only_those_partitions_after_backoff() -> None:
    clock, handler, channel, completions = new_channel()
    handler.script = {TP1: [E.NOT_LEADER_OR_FOLLOWER], TP2: [E.KAFKA_STORAGE_ERROR]}
    channel.send(marker(), completions.callback("t"))
    clock.run_due()
    assert channel.pending() == {"t": (TP2, TP1)} and completions.done == []
    clock.advance(BACKOFF - 1)
    assert len(handler.received) == 1
    clock.advance(1)
    assert [m.partitions for m in handler.received] == [(TP2, TP0, TP1), (TP2, TP1)]
    assert completions.done == ["t"]


def test_unsupported_counts_as_done() -> None:
    clock, handler, channel, completions = new_channel()
    handler.script = {TP0: [E.UNSUPPORTED_FOR_MESSAGE_FORMAT], TP1: [E.UNSUPPORTED_VERSION]}
    channel.send(marker(), completions.callback("t"))
    clock.run_due()
    assert completions.done == ["t"]


def test_fenced_errors_stop_the_transaction() -> None:
    for error in (E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED):
        clock, handler, channel, completions = new_channel()
        handler.script = {TP1: [error], TP2: [E.NOT_LEADER_OR_FOLLOWER]}
        channel.send(marker(), completions.callback("t"))
        clock.advance(10 * BACKOFF)
        assert completions.done == [] and channel.pending() == {}
        assert len(handler.received) == 1


def test_handler_exception_is_retried() -> None:
    class Flaky(FakeMarkerHandler):
        calls = 0

        def write_txn_markers(self, m: TxnMarker) -> dict[object, ErrorCode]:  # type: ignore[override]
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise RuntimeError("partition exploded")
            return super().write_txn_markers(m)  # type: ignore[return-value]

    clock = ManualClock()
    handler = Flaky()
    channel = MarkerChannel(clock, handler, retry_backoff_ms=BACKOFF)
    completions = Completions()
    channel.send(marker(), completions.callback("t"))
    clock.run_due()
    assert completions.done == []
    clock.advance(BACKOFF)
    assert completions.done == ["t"]


class Dropping(MarkerChannel):
    """Drops the first delivery, answers later ones twice (a duplicating network)."""

    drops = 1

    def deliver(self, m: TxnMarker, respond: Callable[[MarkerResponse], None]) -> None:
        if self.drops:
            self.drops -= 1
            return
        super().deliver(m, respond)
        respond({tp: E.NOT_LEADER_OR_FOLLOWER for tp in m.partitions})  # stale duplicate


def test_dropped_delivery_times_out_and_duplicates_are_ignored() -> None:
    clock, handler, channel, completions = new_channel(Dropping)
    channel.send(marker(), completions.callback("t"))
    clock.run_due()
    assert handler.received == []
    clock.advance(TIMEOUT)
    assert handler.received == []
    clock.advance(BACKOFF)
    assert len(handler.received) == 1
    assert completions.done == ["t"]  # the duplicate NOT_LEADER answer changed nothing


class Delaying(MarkerChannel):
    """Holds every answer until the test releases it (delay and reorder)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.held: list[Callable[[], None]] = []

    def deliver(self, m: TxnMarker, respond: Callable[[MarkerResponse], None]) -> None:
        self.held.append(lambda: super(Delaying, self).deliver(m, respond))


def test_late_answer_after_timeout_is_ignored() -> None:
    clock, _handler, channel, completions = new_channel(Delaying)
    assert isinstance(channel, Delaying)
    channel.send(marker(), completions.callback("t"))
    clock.run_due()
    clock.advance(TIMEOUT + BACKOFF)  # timed out, re-sent (also held)
    assert len(channel.held) == 2
    channel.held[0]()  # the answer to the first attempt arrives late
    assert completions.done == []
    channel.held[1]()
    assert completions.done == ["t"]


def test_reordered_transactions_complete_independently() -> None:
    clock, _handler, channel, completions = new_channel(Delaying)
    assert isinstance(channel, Delaying)
    channel.send(marker("a", (TP0,)), completions.callback("a"))
    channel.send(marker("b", (TP1,)), completions.callback("b"))
    clock.run_due()
    channel.held[1]()
    channel.held[0]()
    assert completions.done == ["b", "a"]


def test_newer_marker_replaces_older_by_value() -> None:
    clock, _handler, channel, completions = new_channel(Delaying)
    assert isinstance(channel, Delaying)
    channel.send(marker("t", (TP0,)), completions.callback("old"))
    clock.run_due()
    channel.send(marker("t", (TP1,)), completions.callback("new"))
    clock.run_due()
    channel.held[0]()  # the old entry's answer must not complete or remove the new one
    assert completions.done == [] and channel.pending() == {"t": (TP1,)}
    channel.held[1]()
    assert completions.done == ["new"]


def test_no_partitions_completes_on_the_next_tick() -> None:
    clock, handler, channel, completions = new_channel()
    channel.send(marker(partitions=()), completions.callback("t"))
    assert completions.done == []
    clock.run_due()
    assert completions.done == ["t"] and handler.received == []


def test_cancel_and_close_drop_deliveries() -> None:
    clock, handler, channel, completions = new_channel()
    channel.send(marker("a"), completions.callback("a"))
    channel.send(marker("b"), completions.callback("b"))
    channel.cancel("a")
    clock.run_due()
    assert completions.done == ["b"]
    handler.blocked = {TP0}
    channel.send(marker("c"), completions.callback("c"))
    clock.run_due()
    channel.close()
    handler.blocked.clear()
    clock.advance(10 * BACKOFF)
    assert completions.done == ["b"] and channel.pending() == {}
