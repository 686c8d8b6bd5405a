"""The simulated network: client requests and responses, and the broker's marker channel.

Client traffic.  Every request and every response is a message scheduled on the virtual
clock with a random delay.  Faults, at per-seed rates (swarm testing, ``NetFaults``):

* **drop** -- the request or the response is lost (the client times out; a dropped response
  means the broker *did* the work, the classic source of indeterminate operations);
* **delay / reorder** -- every message takes ``delay_min..delay_max`` ms, and with
  probability ``spike`` a much longer one: messages of different connections overtake each
  other, and a request can land after its client gave up on it (a late, stale request);
* **replay** -- a Produce (idempotent through its sequence number) is delivered a second time
  later, as a stale retransmission would be (``chaos.sim_broker.IDEMPOTENT``);
* **partition** -- a client is cut off from the broker (both directions) for a while.

TCP never duplicates a request on its own, so other requests are duplicated only the way real
clients duplicate them: by retrying after a lost answer (a dropped response, or a delay longer
than the client's timeout), which the client knows about.

Marker channel.  ``FaultyMarkerChannel`` overrides ``MarkerChannel.deliver`` (the product's
documented fault-injection point) to drop the delivery (no answer: the channel times out
and retries), drop the answer after the partitions applied the marker, delay it, deliver it
twice in a row, or (opt-in) deliver it *late* -- after the channel's request timeout, so the
channel's retry overtakes the original.  A *stale* copy of a marker that was delivered may
also arrive much later, as a retransmission from a previous connection or coordinator would:
it is held until its producer has moved on to a newer epoch and a newer transaction of that id
is open (the moment an old marker is most dangerous, KAFKA-17754), then applied once more and
its answer ignored.  Under transaction version 0 a stale copy of the *same* epoch is the
``late`` hazard above; a stale copy of an *older* epoch must be rejected, so this one is in the
swarm.  Every application of a marker is reported to an observer before the fault decides
whether the coordinator hears the answer.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from chaos.sim_loop import SimLoop
from coordinator.marker_channel import MarkerChannel, MarkerHandler, MarkerResponse, TxnMarker
from txn.clock import Clock
from txn.errors import ErrorCode
from txn.ids import TopicPartition


@dataclass(frozen=True, slots=True)
class NetFaults:
    """Per-seed fault rates of the client network (probabilities per message)."""

    drop: float = 0.0
    delay_min: int = 1
    delay_max: int = 5
    spike: float = 0.0
    spike_ms: int = 4000
    replay: float = 0.0
    partition: float = 0.0  # probability per second of virtual time that a client is cut off
    partition_ms: int = 5000

    @property
    def any(self) -> bool:
        return bool(self.drop or self.spike or self.replay or self.partition)


@dataclass(frozen=True, slots=True)
class MarkerFaults:
    """Per-seed fault rates of the marker channel (probabilities per delivery)."""

    drop: float = 0.0
    drop_response: float = 0.0
    delay: float = 0.0
    delay_ms: int = 500
    duplicate: float = 0.0
    # Delivered after the channel's request timeout, so the channel's retry overtakes it and the
    # stale copy may land in a *later* transaction of the same (pid, epoch) -- impossible with
    # the product's in-process channel, possible for a remote one under transaction version 0
    # (KAFKA-17754).  Off in the swarm; ``chaos run --late-markers`` turns it on.
    late: float = 0.0
    # A copy of an applied marker comes back once its producer's epoch moved on (see the module
    # docstring); ``stale_ms`` is the longest it is held.
    stale: float = 0.0
    stale_ms: int = 10_000

    @property
    def any(self) -> bool:
        return bool(
            self.drop
            or self.drop_response
            or self.delay
            or self.duplicate
            or self.late
            or self.stale
        )


NO_NET_FAULTS = NetFaults()
NO_MARKER_FAULTS = MarkerFaults()


class SimNet:
    """Client <-> broker messages with faults; the broker is a function request -> response.

    ``handle(request)`` returns the response, or None when the broker is down or crashed
    while handling it (the connection is gone: no answer).
    """

    def __init__(
        self,
        loop: SimLoop,
        rng: random.Random,
        handle: Callable[[Any], Any | None],
        is_idempotent: Callable[[Any], bool],
    ) -> None:
        self._loop = loop
        self._rng = rng
        self._handle = handle
        self._is_idempotent = is_idempotent
        self.faults = NO_NET_FAULTS
        self._cut_until: dict[str, int] = {}
        self.on_fault: Callable[[str, dict[str, Any]], None] | None = None
        self.sent = 0
        self.dropped = 0
        self.replayed = 0

    # -- partitions -------------------------------------------------------------------------------

    def cut(self, client: str, until_ms: int) -> None:
        self._cut_until[client] = max(self._cut_until.get(client, 0), until_ms)

    def heal_all(self) -> None:
        self._cut_until.clear()

    def is_cut(self, client: str) -> bool:
        until = self._cut_until.get(client)
        return until is not None and until > self._loop.now_ms()

    # -- messages ---------------------------------------------------------------------------------

    def _delay(self) -> int:
        f = self.faults
        rng = self._rng
        delay = rng.randint(f.delay_min, f.delay_max)
        if f.spike and rng.random() < f.spike:
            delay += rng.randint(f.spike_ms // 4, f.spike_ms)
        return delay

    def _lost(self, client: str) -> bool:
        if self._cut_until and self.is_cut(client):
            return True
        drop = self.faults.drop
        return bool(drop) and self._rng.random() < drop

    def send(self, client: str, request: Any, on_response: Callable[[Any], None]) -> None:
        """Send ``request``; ``on_response`` is called if and when an answer arrives."""
        self.sent += 1
        if self._lost(client):
            self.dropped += 1
            return
        self._loop.after(self._delay(), lambda: self._arrive(client, request, on_response))
        f = self.faults
        if f.replay and self._rng.random() < f.replay and self._is_idempotent(request):
            self.replayed += 1
            late = self._delay() + self._rng.randint(0, f.spike_ms)
            self._loop.after(late, lambda: self._arrive(client, request, _ignore))
            if self.on_fault is not None:
                self.on_fault("replay", {"client": client, "request": type(request).__name__})

    def _arrive(self, client: str, request: Any, on_response: Callable[[Any], None]) -> None:
        if self._cut_until and self.is_cut(client):
            self.dropped += 1
            return
        response = self._handle(request)
        if response is None:
            return
        if self._lost(client):
            self.dropped += 1
            return
        self._loop.after(self._delay(), lambda: on_response(response))


def _ignore(_response: Any) -> None:
    return None


MarkerObserver = Callable[[TxnMarker, Mapping[TopicPartition, ErrorCode], str], None]
"""(marker, the partitions' answers, how it was delivered) after the handler applied it."""

StaleGate = Callable[[TxnMarker], bool]
"""Whether a stale copy of ``marker`` may land now: its producer moved on to a newer epoch (or
producer id) and a newer transaction is open."""

STALE_POLL_MS = 100


def _never(_marker: TxnMarker) -> bool:
    return False


class FaultyMarkerChannel(MarkerChannel):
    """A ``MarkerChannel`` whose deliveries the simulator drops, delays, duplicates, reorders."""

    def __init__(
        self,
        clock: Clock,
        handler: MarkerHandler,
        rng: random.Random,
        faults: Callable[[], MarkerFaults],
        observer: MarkerObserver,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 3000,
        stale_gate: StaleGate = _never,
    ) -> None:
        super().__init__(
            clock, handler, retry_backoff_ms=retry_backoff_ms, request_timeout_ms=request_timeout_ms
        )
        self._sim_clock = clock
        self._sim_handler = handler
        self._rng = rng
        self._faults = faults
        self._observer = observer
        self._timeout_ms = request_timeout_ms
        self._stale_gate = stale_gate

    def _apply(self, marker: TxnMarker, how: str) -> MarkerResponse:
        try:
            response: MarkerResponse = self._sim_handler.write_txn_markers(marker)
        except Exception:
            response = {}
        self._observer(marker, response, how)
        return response

    def _maybe_stale_copy(self, marker: TxnMarker, f: MarkerFaults) -> None:
        """With probability ``f.stale``, a copy of ``marker`` comes back later (see above)."""
        if not f.stale or self._rng.random() >= f.stale:
            return
        deadline = self._sim_clock.now_ms() + self._rng.randint(f.stale_ms // 4, f.stale_ms)

        def poll() -> None:
            if self._stale_gate(marker):
                self._apply(marker, "stale")  # nobody waits for this answer
            elif self._sim_clock.now_ms() < deadline:
                self._sim_clock.schedule(STALE_POLL_MS, poll)

        self._sim_clock.schedule(STALE_POLL_MS, poll)

    def deliver(self, marker: TxnMarker, respond: Callable[[MarkerResponse], None]) -> None:
        f = self._faults()
        rng = self._rng
        if not f.any:
            respond(self._apply(marker, "direct"))
            return
        roll = rng.random()
        if roll < f.drop:
            return  # lost on the way: the channel times out and retries
        roll -= f.drop
        if roll < f.late:
            # Held past the request timeout: the retry overtakes it, then it lands anyway.
            delay = self._timeout_ms + rng.randint(1, self._timeout_ms)
            self._sim_clock.schedule(delay, lambda: respond(self._apply(marker, "late")))
            return
        roll -= f.late
        if roll < f.delay:
            delay = rng.randint(1, min(f.delay_ms, self._timeout_ms - 1))
            self._sim_clock.schedule(delay, lambda: respond(self._apply(marker, "delayed")))
            return
        roll -= f.delay
        if roll < f.duplicate:
            # Delivered twice before the coordinator hears back (as a retry after a lost answer
            # would be); the later answer is the one the channel sees first.
            self._apply(marker, "direct")
            respond(self._apply(marker, "duplicate"))
            return
        roll -= f.duplicate
        response = self._apply(marker, "direct")
        self._maybe_stale_copy(marker, f)
        if roll < f.drop_response:
            return  # applied, but the answer is lost: the channel retries (a duplicate)
        respond(response)
