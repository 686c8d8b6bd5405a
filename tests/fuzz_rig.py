"""Fuzzing a running broker over TCP, shared by ``bench/fuzz.py`` and the CI fuzz tests.

Fuzzing connections send frames from a frame source (byte mutations of valid requests, or
``tests.structural_frames``), each reconnecting whenever the broker closes it or a request
gets no answer within 250 ms (acks=0 and long polls rightly get none).  A well-behaved client
(the bystander) asks ApiVersions and Metadata every 100 ms meanwhile and times each answer.
The result: frames sent, answered, closed and unanswered, the bystander's failures and its
slowest answer (a stall), and the broker process's peak resident memory.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coordinator.protocol.api_versions import SUPPORTED
from tests.kafka_wire import WireClient
from tests.unit.test_wire_guard import frame

FrameSource = Callable[[], bytes]
STALL_S = 1.0  # a bystander answer slower than this is a stall


def valid_frames() -> list[bytes]:
    out = [frame(k, v, {}) for k, (_n, lo, hi) in sorted(SUPPORTED.items()) for v in (lo, hi)]
    out.append(
        frame(
            0,
            9,
            {
                "acks": -1,
                "timeout": 1000,
                "topic_data": [
                    {"name": "fuzz", "partition_data": [{"index": 0, "records": b"\x00" * 70}]}
                ],
            },
        )
    )
    out.append(frame(3, 12, {"topics": [{"name": "a"}, {"name": "b"}]}))
    return out


def mutate(rng: random.Random, raw: bytes) -> bytes:
    buf = bytearray(raw)
    for _ in range(rng.randint(1, 6)):
        buf[rng.randrange(8, len(buf)) if len(buf) > 8 else 0] = rng.randrange(256)
    if rng.random() < 0.3:
        buf = buf[: rng.randint(8, len(buf))] + bytes(rng.randrange(256) for _ in range(12))
    return bytes(buf)


def byte_mutations(seed: int) -> FrameSource:
    """Byte-level mutations (bytes overwritten, frames cut, junk appended) of valid requests."""
    rng = random.Random(seed)
    pool = valid_frames()
    return lambda: mutate(rng, rng.choice(pool))


class Bystander(threading.Thread):
    """A well-behaved client asking ApiVersions and Metadata every 100 ms, timing each."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.ok = 0
        self.failed = 0
        self.slowest_s = 0.0
        self.stalls = 0
        self.stop = threading.Event()

    def run(self) -> None:
        # A slow answer is a stall (counted apart); only a refusal or a drop is a failure.
        client = WireClient(self.bootstrap, timeout_s=30.0)
        turn = 0
        while not self.stop.is_set():
            turn += 1
            started = time.monotonic()
            try:
                if turn % 2:
                    resp = client.request(18, 3, {"client_software_name": "bystander"})
                else:
                    resp = client.request(3, 12, {"topics": None})
                if int(getattr(resp, "error_code", 0)) == 0:
                    self.ok += 1
                else:
                    self.failed += 1
            except OSError:
                self.failed += 1
                client.close()
                client = WireClient(self.bootstrap, timeout_s=30.0)
            took = time.monotonic() - started
            self.slowest_s = max(self.slowest_s, took)
            self.stalls += took > STALL_S
            self.stop.wait(0.1)
        client.close()


class Fuzzer(threading.Thread):
    """One fuzzing connection (reopened whenever the broker closes it)."""

    def __init__(self, bootstrap: str, frames: int, source: FrameSource) -> None:
        super().__init__(daemon=True)
        host, port = bootstrap.rsplit(":", 1)
        self.address = (host, int(port))
        self.frames = frames
        self.source = source
        self.answered = self.closed = self.silent = 0

    @property
    def sent(self) -> int:
        return self.answered + self.closed + self.silent

    def run(self) -> None:
        sock: socket.socket | None = None
        for _ in range(self.frames):
            if sock is None:
                sock = socket.create_connection(self.address, timeout=5)
                # A request may rightly get no answer (acks=0) or a long poll: give up on it
                # quickly and start a new connection instead of waiting.
                sock.settimeout(0.25)
            payload = self.source()
            try:
                sock.sendall(struct.pack(">i", len(payload)) + payload)
                head = _exact(sock, 4)
                _exact(sock, struct.unpack(">i", head)[0])
                self.answered += 1
            except TimeoutError:
                self.silent += 1
                sock.close()
                sock = None
            except OSError:
                self.closed += 1
                sock.close()
                sock = None
        if sock is not None:
            sock.close()


def _exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 16))
        if not chunk:
            raise ConnectionError
        buf += chunk
    return bytes(buf)


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MiB; 0 where /proc does not say."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def fuzz(
    bootstrap: str,
    frames: int,
    connections: int,
    sources: Callable[[int], FrameSource],
    progress: Callable[[int, float], None] | None = None,
) -> dict[str, Any]:
    """Send ``frames`` frames over ``connections`` connections; ``sources(k)`` feeds the k-th."""
    per = -(-frames // connections)
    workers = [Fuzzer(bootstrap, per, sources(k)) for k in range(connections)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    while any(w.is_alive() for w in workers):
        for w in workers:
            w.join(2.0)
            if not w.is_alive():
                continue
            break
        if progress is not None:
            progress(sum(w.sent for w in workers), time.perf_counter() - started)
    elapsed = time.perf_counter() - started
    sent = sum(w.sent for w in workers)
    return {
        "frames": sent,
        "connections": connections,
        "seconds": round(elapsed, 1),
        "frames_per_s": round(sent / elapsed) if elapsed else 0,
        "answered": sum(w.answered for w in workers),
        "closed": sum(w.closed for w in workers),
        "unanswered_within_250ms": sum(w.silent for w in workers),
    }
