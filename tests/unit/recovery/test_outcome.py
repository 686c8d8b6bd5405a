"""The force-terminate read-back (producer/twophase/outcome.py) against scripted Fetch answers.

The answers stand in for a broker (fault injection): a marker found, a leader that does not
advance, and malformed answers, which must give a typed error, never a hang or a crash.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

import pytest

from producer.admin import Admin
from producer.protocol.records import CorruptRecordError
from producer.twophase.outcome import ended_as
from txn.batch import ControlType, build_batch, build_control_batch
from txn.ids import TopicPartition

TP = TopicPartition("out", 0)
PID = 7


def _answer(records: bytes, high_watermark: int, partitions: int = 1) -> Any:
    part = SimpleNamespace(error_code=0, records=records, high_watermark=high_watermark)
    return SimpleNamespace(responses=[SimpleNamespace(partitions=[part] * partitions)])


def _admin(answers: list[Any]) -> tuple[Admin, list[int]]:
    """An admin whose Fetch answers come from ``answers``; the fetch offsets asked are kept."""
    asked: list[int] = []

    def send(node: int, api: int, body: dict[str, Any], **_: Any) -> Any:
        asked.append(body["topics"][0]["partitions"][0]["fetch_offset"])
        return answers.pop(0)

    client = SimpleNamespace(call=lambda fn: fn(), leader_for=lambda tp: 1, send=send)
    return cast(Admin, SimpleNamespace(client=client)), asked


def _marker(kind: ControlType, pid: int = PID) -> bytes:
    return build_control_batch(
        kind, producer_id=pid, producer_epoch=1, coordinator_epoch=0, timestamp_ms=0
    )


def _control_with_key(key: bytes) -> bytes:
    return build_batch(
        [(key, b"")], timestamp_ms=0, producer_id=PID, transactional=True, control=True
    )


def _data(base_offset: int) -> bytes:
    return build_batch([(None, b"v")], base_offset=base_offset, timestamp_ms=0, producer_id=PID)


def _ended(answers: list[Any]) -> tuple[ControlType | None, list[int]]:
    admin, asked = _admin(answers)
    return ended_as(admin, {TP: 0}, PID, timeout_s=0), asked


def test_reads_on_until_the_producers_marker() -> None:
    other = _marker(ControlType.ABORT, pid=PID + 1)  # another producer's marker is skipped
    ended, asked = _ended([_answer(_data(0) + other, 10), _answer(_marker(ControlType.COMMIT), 10)])
    assert ended is ControlType.COMMIT
    assert asked == [0, 1]


def test_no_marker_up_to_the_high_watermark_is_none() -> None:
    assert _ended([_answer(_data(0), 1)]) == (None, [0])


def test_a_leader_that_does_not_advance_ends_the_read() -> None:
    # The same batch again and again, far below the high watermark: no endless loop.
    ended, asked = _ended([_answer(_data(0), 1_000)] * 2)
    assert ended is None and asked == [0, 1]


@pytest.mark.parametrize(
    "answer",
    [
        lambda: _answer(_marker(ControlType.COMMIT), 10, partitions=2),
        lambda: _answer(_control_with_key(struct.pack(">hh", 0, 9)), 10),
    ],
    ids=["two-partitions", "unknown-marker-type"],
)
def test_a_malformed_answer_is_a_typed_error(answer: Callable[[], Any]) -> None:
    admin, _ = _admin([answer()])
    with pytest.raises(CorruptRecordError):
        ended_as(admin, {TP: 0}, PID, timeout_s=0)
