"""Structural and byte-level fuzzing of a real broker, with a healthy client throughout.

Every API and version the broker advertises receives schema-generated hostile requests
(boundary values, huge and negative counts, truncations, tag bombs, crafted record batches;
``tests/structural_frames.py``) and byte mutations of valid requests.  The broker must keep
answering a well-behaved client, stay within a memory bound, and afterwards, killed -9,
restart on its own data directory and serve produce and consume as before.  Long runs:
``python bench/fuzz.py`` (figures in docs/performance.md).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from coordinator.launcher import LocalBroker
from tests import structural_frames
from tests.fuzz_rig import Bystander, byte_mutations, fuzz, peak_rss_mib

FRAMES = 4_000
CONNECTIONS = 4
PEAK_RSS_MIB = 512  # the broker idles near 60 MiB; a bomb that got through would show


def _seed() -> int:
    env = os.environ.get("SHARETXN_FUZZ_SEED")
    return int(env) if env else random.SystemRandom().randrange(1 << 31)


def _round_trip(bootstrap: str, topic: str) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(10):
        producer.produce(topic, value=f"after-{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "after-fuzz",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.subscribe([topic])
        values: list[bytes] = []
        for _ in range(60):
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                values.append(message.value() or b"")
            if len(values) >= 10:
                break
        return values
    finally:
        consumer.close()


@pytest.mark.parametrize("mode", ["structure", "bytes"])
def test_hostile_frames_leave_the_broker_serving_and_restartable(tmp_path: Path, mode: str) -> None:
    seed = _seed()
    where = f"(mode {mode}, seed {seed}: rerun with SHARETXN_FUZZ_SEED={seed})"
    with LocalBroker(data_dir=tmp_path / "data") as broker:
        assert broker.process is not None
        bystander = Bystander(broker.bootstrap_servers)
        bystander.start()
        if mode == "structure":
            result = fuzz(
                broker.bootstrap_servers,
                FRAMES,
                CONNECTIONS,
                lambda k: structural_frames.factory(seed * 1000 + k),
            )
        else:
            result = fuzz(
                broker.bootstrap_servers,
                FRAMES,
                CONNECTIONS,
                lambda k: byte_mutations(seed * 1000 + k),
            )
        bystander.stop.set()
        bystander.join(10)
        assert broker.process.poll() is None, f"the broker died {where}"
        peak = peak_rss_mib(broker.process.pid)
        print(f"{mode}: {result} bystander ok {bystander.ok} slowest {bystander.slowest_s:.2f} s")
        assert result["frames"] >= FRAMES, where
        assert bystander.failed == 0, f"the healthy client was refused {where}"
        assert bystander.ok > 0, where
        assert peak < PEAK_RSS_MIB, f"peak RSS {peak:.0f} MiB {where}"
        broker.kill()
        broker.start()
        values = _round_trip(broker.bootstrap_servers, "after-fuzz")
        assert values == [f"after-{i}".encode() for i in range(10)], where
