"""The server's cleaner executor: the copy runs in a real worker process, the result comes
back on the event loop, and the swap it leads to is the one the inline executor makes."""

from __future__ import annotations

import asyncio

from coordinator.cleaner_worker import ProcessCleanerExecutor
from coordinator.log.cleaner import CleanerPolicy
from coordinator.log.cleaner_passes import CleanTarget, InlineCleanerExecutor, LogCleaner
from coordinator.log.memory_log import MemoryLog
from coordinator.log.storage import LogConfig
from txn.batch import build_batch
from txn.clock import ManualClock

T0 = 1_700_000_000_000
POLICY = CleanerPolicy(delete_retention_ms=1000, min_cleanable_dirty_ratio=0.01)


def filled_log() -> MemoryLog:
    one = len(build_batch([(b"k0", b"v00")], timestamp_ms=T0))
    log = MemoryLog(LogConfig(segment_bytes=2 * one))
    for i in range(12):
        log.append(build_batch([(b"k%d" % (i % 3), b"v%02d" % i)], timestamp_ms=T0), T0)
    return log


def target(log: MemoryLog) -> CleanTarget:
    return CleanTarget("t-0", log, POLICY, lambda: (log.log_end_offset, []))


def test_the_worker_process_cleans_as_the_inline_executor_does() -> None:
    inline = filled_log()
    assert LogCleaner(ManualClock(T0)).run_pass([target(inline)]) > 0
    expected = [raw for _h, raw in inline.batches(0)]

    async def with_worker() -> list[bytes]:
        loop = asyncio.get_running_loop()
        executor = ProcessCleanerExecutor(loop)
        cleaner = LogCleaner(ManualClock(T0), executor)
        log = filled_log()
        try:
            assert cleaner.run_pass([target(log)]) == 0  # the copy is under way elsewhere
            assert cleaner.state("t-0").busy
            for _ in range(600):
                if not cleaner.state("t-0").busy:
                    break
                await asyncio.sleep(0.05)
            assert cleaner.stats.runs == 1
            return [raw for _h, raw in log.batches(0)]
        finally:
            executor.close()

    assert asyncio.run(with_worker()) == expected
    assert isinstance(LogCleaner(ManualClock(T0)).executor, InlineCleanerExecutor)
