"""Fuzz a running broker over TCP: mutated requests of every advertised API and version.

Sixteen connections send byte-level mutations (bytes overwritten, frames cut short, junk
appended) of valid requests of every API and version the broker advertises, each
reconnecting whenever the broker closes it or a request gets no answer within 250 ms
(acks=0, long polls); a second, well-behaved client asks ApiVersions every 100 ms
meanwhile.  At the end: frames sent, frames per second, how many were answered and how
many closed their connection, whether the broker process is still alive (crashes: 0) and
how many of the bystander's requests failed (disturbed: 0).

Example::

    python bench/fuzz.py                      # 1,000,000 frames, several minutes
    python bench/fuzz.py --frames 50000 --seed 7 --json out.json
"""

from __future__ import annotations

import argparse
import random
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import toolkit

from coordinator.launcher import LocalBroker
from coordinator.protocol.api_versions import SUPPORTED
from tests.kafka_wire import WireClient
from tests.unit.test_wire_guard import frame

console = toolkit.make_console(100)


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


class Bystander(threading.Thread):
    """A well-behaved client asking ApiVersions every 100 ms."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.ok = 0
        self.failed = 0
        self.stop = threading.Event()

    def run(self) -> None:
        client = WireClient(self.bootstrap)
        while not self.stop.is_set():
            try:
                resp = client.request(18, 3, {"client_software_name": "bystander"})
                if int(resp.error_code) == 0:
                    self.ok += 1
                else:
                    self.failed += 1
            except OSError:
                self.failed += 1
                client = WireClient(self.bootstrap)
            self.stop.wait(0.1)
        client.close()


class Fuzzer(threading.Thread):
    """One fuzzing connection (reopened whenever the broker closes it)."""

    def __init__(self, bootstrap: str, frames: int, seed: int, pool: list[bytes]) -> None:
        super().__init__(daemon=True)
        host, port = bootstrap.rsplit(":", 1)
        self.address = (host, int(port))
        self.frames = frames
        self.rng = random.Random(seed)
        self.pool = pool
        self.answered = self.closed = self.silent = 0

    def run(self) -> None:
        sock: socket.socket | None = None
        for _ in range(self.frames):
            if sock is None:
                sock = socket.create_connection(self.address, timeout=5)
                # A request may rightly get no answer (acks=0) or a long poll: give up on it
                # quickly and start a new connection instead of waiting.
                sock.settimeout(0.25)
            payload = mutate(self.rng, self.rng.choice(self.pool))
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


def fuzz(bootstrap: str, frames: int, seed: int, connections: int) -> dict[str, Any]:
    pool = valid_frames()
    per = -(-frames // connections)
    workers = [Fuzzer(bootstrap, per, seed * 1000 + k, pool) for k in range(connections)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    while any(w.is_alive() for w in workers):
        time.sleep(5)
        done = sum(w.answered + w.closed + w.silent for w in workers)
        print(f"  {done:,} frames ({done / (time.perf_counter() - started):,.0f}/s)", flush=True)
    elapsed = time.perf_counter() - started
    sent = sum(w.answered + w.closed + w.silent for w in workers)
    return {
        "frames": sent,
        "connections": connections,
        "seconds": round(elapsed, 1),
        "frames_per_s": round(sent / elapsed),
        "answered": sum(w.answered for w in workers),
        "closed": sum(w.closed for w in workers),
        "unanswered_within_250ms": sum(w.silent for w in workers),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    toolkit.add_int_options(parser, frames=1_000_000, seed=1, connections=16)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    toolkit.install_sigterm()
    run = toolkit.announce(console, "fuzz.py", argv)
    result: dict[str, Any] = {}
    with LocalBroker() as broker:
        bystander = Bystander(broker.bootstrap_servers)
        bystander.start()

        def fuzz_all() -> float:
            result.update(fuzz(broker.bootstrap_servers, args.frames, args.seed, args.connections))
            return float(result["frames_per_s"])

        timed = toolkit.timed(fuzz_all)
        bystander.stop.set()
        bystander.join(5)
        alive = broker.process is not None and broker.process.poll() is None
        result.update(
            crashes=0 if alive else 1,
            bystander_requests=bystander.ok + bystander.failed,
            bystander_failures=bystander.failed,
            other_cores=round(timed.other_cores, 2),
        )
    print(
        f"{result['frames']:,} mutated frames in {result['seconds']} s"
        f" ({result['frames_per_s']:,}/s, {result['connections']} connections):"
        f" {result['answered']:,} answered, {result['closed']:,} closed their connection,"
        f" {result['unanswered_within_250ms']:,} unanswered within 250 ms;"
        f" crashes {result['crashes']};"
        f" bystander {result['bystander_requests']:,} requests,"
        f" {result['bystander_failures']} disturbed"
        + (f" (other processes used {timed.other_cores:.2f} cores)" if timed.disturbed else "")
    )
    run.save(args, console, result)
    return 0 if result["crashes"] == 0 and result["bystander_failures"] == 0 else 1


if __name__ == "__main__":
    toolkit.main_guard(main, console)
