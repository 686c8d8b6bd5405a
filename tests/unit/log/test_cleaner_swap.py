"""The cleaner's swap on a ``FileLog``, as Kafka's ``LocalLog.replaceSegments`` does it.

* Only the cleaned segments change: the others, the active one included, are neither
  reopened nor rescanned, and keep their state (creation time: ``segment.ms`` rolling).
* The old files are renamed ``.deleted`` and removed ``file.delete.delay.ms`` later (at once
  on a restart); a reader of an old segment keeps reading it meanwhile.
* ``min.compaction.lag.ms`` holds back only the dirty segments (``cleanableOffsets``).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from coordinator.broker import BrokerCore
from coordinator.log.cleaner import CleanerPolicy, by_segment, clean, cleanable_segments
from coordinator.log.compaction import CleanerState, plan_clean
from coordinator.log.file_log import FileLog, FileStorage
from coordinator.log.storage import LogConfig, SegmentInfo
from txn.batch import BatchHeader, build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition

T0 = 4_000_000_000_000  # ahead of the real clock: a file's mtime never passes for it
POLICY = CleanerPolicy(min_cleanable_dirty_ratio=0.0)
ONE = len(build_batch([(b"k0", b"v0")], timestamp_ms=T0))


def _never_aborted(_header: BatchHeader) -> bool:
    return False


def _fill(log: FileLog, keys: str, now_ms: int = T0, ts: int = T0) -> None:
    for i, key in enumerate(keys):
        log.append(build_batch([(key.encode(), b"v%d" % i)], timestamp_ms=ts), now_ms)


def _compact(log: FileLog, now_ms: int = T0) -> None:
    segs = log.segments()[:-1]
    end = segs[-1].next_offset
    batches = [(h, bytes(raw)) for h, raw in log.batches(0) if h.base_offset < end]
    grouped = by_segment(segs, clean(batches, _never_aborted, now_ms, POLICY))
    original = by_segment(segs, [raw for _h, raw in batches])
    # As run_clean: only the segments whose bytes change.
    log.replace_segments({b: out for b, out in grouped.items() if out != original[b]}, end)


def test_a_swap_scans_only_the_cleaned_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = FileLog(tmp_path / "t-0", LogConfig(segment_bytes=2 * ONE))
    _fill(log, "ababcdefx")  # segments [a b] [a b] [c d] [e f] and the active [x]
    kept = {seg.base_offset: seg for seg in log.segments()}
    scans: list[tuple[int, bool]] = []
    real_scan = FileLog._scan

    def spy(self: FileLog, seg: object, *, verify_crc: bool, gaps: bool = False) -> bool:
        scans.append((seg.base, verify_crc))  # type: ignore[attr-defined]
        return real_scan(self, seg, verify_crc=verify_crc, gaps=gaps)  # type: ignore[arg-type]

    monkeypatch.setattr(FileLog, "_scan", spy)
    _compact(log)
    # Only segment 0 changed (a and b live on in segment 2); it is walked without a CRC check.
    assert scans == [(0, False)]
    after = {seg.base_offset: seg for seg in log.segments()}
    assert after[0].size_bytes == 0 and all(after[b] == kept[b] for b in (2, 4, 6, 8))
    assert [h.base_offset for h, _ in log.batches(0)] == [2, 3, 4, 5, 6, 7, 8]
    log.close()


def test_the_active_segment_keeps_its_creation_time(tmp_path: Path) -> None:
    """Batches without timestamps roll by the segment's creation time (``segment.ms``); a
    swap that reopened the log took the file's modification time instead and rolled early."""
    config = LogConfig(segment_bytes=2 * ONE, segment_ms=1000)
    log = FileLog(tmp_path / "t-0", config)
    _fill(log, "abab")
    log.append(build_batch([(b"x", b"1")], timestamp_ms=-1), T0)  # the active segment, at T0
    _compact(log)
    log.append(build_batch([(b"y", b"2")], timestamp_ms=-1), T0 + 500)
    assert len(log.segments()) == 3  # 500 ms after its creation: no roll
    log.append(build_batch([(b"z", b"3")], timestamp_ms=-1), T0 + 1001)
    assert len(log.segments()) == 4
    log.close()


def test_a_cleaned_segment_keeps_its_times_across_a_restart(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", LogConfig(segment_bytes=2 * ONE))
    _fill(log, "ababx", now_ms=T0 + 7)
    _compact(log)
    assert log.segments()[0].size_bytes == 0
    assert log.segments()[0].largest_timestamp_ms == T0 + 7  # empty: its last modification
    log.close()
    reopened = FileLog(tmp_path / "t-0", LogConfig(segment_bytes=2 * ONE))
    assert reopened.segments()[0].largest_timestamp_ms == T0 + 7
    reopened.close()


def test_retired_files_stay_for_file_delete_delay_ms(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    config = BrokerConfig({"log.cleaner.backoff.ms": 1000})
    core = BrokerCore(FileStorage(tmp_path), clock, config, random.Random(1))
    configs = {
        "cleanup.policy": "compact",
        "internal.segment.bytes": str(2 * ONE + 2),
        "file.delete.delay.ms": "5000",
    }
    assert core.create_topic("table", 1, 1, configs).error is ErrorCode.NONE
    tp = TopicPartition("table", 0)
    for i in range(9):
        batch = build_batch([(b"k%d" % (i % 2), b"v%d" % i)], timestamp_ms=T0)
        assert core.produce(tp, batch, None).error is ErrorCode.NONE
    directory = tmp_path / "table-0"
    clock.advance(1000)
    assert core.cleaner_runs == 1
    retired = sorted(directory.glob("*.deleted"))
    assert retired  # renamed, not removed
    clock.advance(4999)
    assert sorted(directory.glob("*.deleted")) == retired
    clock.advance(1)
    assert not list(directory.glob("*.deleted"))
    core.close()


def test_leftover_deleted_files_go_on_a_restart(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", LogConfig(segment_bytes=2 * ONE))
    _fill(log, "ababx")
    before = [(h.base_offset, bytes(raw)) for h, raw in log.batches(0)]
    _compact(log)
    after = [(h.base_offset, bytes(raw)) for h, raw in log.batches(0)]
    assert after != before and list(log.directory.glob("*.deleted"))
    log.close()  # a crash before the delay ran out: the renamed files stay
    reopened = FileLog(tmp_path / "t-0", LogConfig(segment_bytes=2 * ONE))
    assert not list(reopened.directory.glob("*.deleted"))
    assert [(h.base_offset, bytes(raw)) for h, raw in reopened.batches(0)] == after
    reopened.close()


def _seg(base: int, nxt: int, largest: int) -> SegmentInfo:
    return SegmentInfo(base, nxt, 100, largest)


def test_min_compaction_lag_looks_at_the_dirty_segments_only() -> None:
    """A segment cleaned earlier with a recent largest timestamp does not hold the pass back:
    only dirty segments younger than the lag do (Kafka's cleanableOffsets)."""
    lagged = CleanerPolicy(min_compaction_lag_ms=10_000)
    now = T0 + 60_000
    segs = [_seg(0, 10, now - 1000), _seg(10, 20, T0), _seg(20, 30, T0), _seg(30, 31, now)]
    assert cleanable_segments(segs, 31, now, lagged, first_dirty=10) == 3
    assert cleanable_segments(segs, 31, now, lagged, first_dirty=0) == 0  # never cleaned
    segs[2] = _seg(20, 30, now - 1)
    assert cleanable_segments(segs, 31, now, lagged, first_dirty=10) == 2
    # A lag of 0 checks nothing, not even a timestamp in the future.
    segs[1] = _seg(10, 20, now + 1000)
    assert cleanable_segments(segs, 31, now, CleanerPolicy(), first_dirty=10) == 3


def test_a_just_cleaned_segment_does_not_hold_the_next_pass_back(tmp_path: Path) -> None:
    """min.compaction.lag.ms raised after a pass: the cleaned segment [2, 4), 5 s old, is not
    dirty and does not count; the dirty segments are old enough, so the pass cleans them."""
    log = FileLog(tmp_path / "t-0", LogConfig(segment_bytes=2 * ONE))
    _fill(log, "ab", ts=T0)
    _fill(log, "ab", ts=T0 + 50_000)
    _fill(log, "c", ts=T0)
    now = T0 + 55_000
    job = plan_clean(log, log.log_end_offset, (), now, POLICY, CleanerState())
    assert job is not None and job.end == 4
    _compact(log, now)
    _fill(log, "ababx", ts=T0)  # segments [4: c a] [6: b a] and the active [8: b x]
    lagged = CleanerPolicy(min_cleanable_dirty_ratio=0.0, min_compaction_lag_ms=10_000)
    job = plan_clean(log, log.log_end_offset, (), now, lagged, CleanerState())
    assert job is not None and job.end == 8
    log.close()


class _Killed(BaseException):
    """The process dies here (kill -9): nothing after this file operation happens."""


def test_a_kill_at_any_step_of_the_swap_loads_old_or_new_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every rename, replace and unlink of the swap in turn is the last one before a kill:
    the log then loads with every old record or every new one (the new ones once the
    manifest landed), with no staged file or manifest left."""
    config = LogConfig(segment_bytes=2 * ONE)
    outcomes: set[str] = set()
    after: list[tuple[int, bytes]] = []
    step = 0
    while True:
        directory = tmp_path / f"t-{step}"
        log = FileLog(directory, config)
        _fill(log, "ababcdabx")
        before = [(h.base_offset, bytes(raw)) for h, raw in log.batches(0)]
        left = [step]

        def counted(real: object, left: list[int] = left) -> object:
            def op(self: Path, *args: object, **kwargs: object) -> object:
                if left[0] == 0:
                    raise _Killed
                left[0] -= 1
                return real(self, *args, **kwargs)  # type: ignore[operator]

            return op

        with monkeypatch.context() as patch:
            for name in ("rename", "replace", "unlink"):
                patch.setattr(Path, name, counted(getattr(Path, name)))
            try:
                _compact(log)
                killed = False
            except _Killed:
                killed = True
        committed = (directory / "cleaner-swap").exists()
        reopened = FileLog(directory, config)
        loaded = [(h.base_offset, bytes(raw)) for h, raw in reopened.batches(0)]
        if not killed:
            after = loaded
        assert not list(directory.glob("*.cleaned")) and not (directory / "cleaner-swap").exists()
        if committed:  # the kill came after the commit point: the swap is finished on load
            assert loaded != before and reopened.cleaned_offset == 8
        reopened.close()
        if not killed:
            break
        outcomes.add("new" if loaded != before else "old")
        step += 1
    assert outcomes == {"old", "new"} and step > 5
    for n in range(step):  # the killed runs loaded old or new, nothing else
        again = FileLog(tmp_path / f"t-{n}", config)
        assert [(h.base_offset, bytes(raw)) for h, raw in again.batches(0)] in (before, after)
        again.close()


def test_a_purge_removes_only_the_files_retired_before_it_was_scheduled(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", LogConfig(segment_bytes=2 * ONE))
    _fill(log, "acabx")  # [0: a c] [2: a b] [4: x]
    _compact(log)  # segment 0 keeps c
    first = log.retired_mark
    first_files = set(log.directory.glob("*.deleted"))
    assert {p.name for p in first_files} == {f"{0:020d}.log.deleted"}
    _fill(log, "c")  # [4: x c]
    _fill(log, "z")  # the active [6: z]
    _compact(log)  # segment 0 again, its first file not yet removed: a numbered name
    later = set(log.directory.glob("*.deleted")) - first_files
    assert f"{0:020d}.log.1.deleted" in {p.name for p in later}
    assert [h.base_offset for h, _ in log.batches(0)] == [2, 3, 4, 5, 6]
    assert later and len(set(log.directory.glob("*.deleted"))) == log.retired_mark
    assert log.purge_deleted(first) > 0
    assert set(log.directory.glob("*.deleted")) == later
    assert log.purge_deleted() > 0 and not list(log.directory.glob("*.deleted"))
    log.close()
