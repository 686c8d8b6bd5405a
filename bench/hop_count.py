"""Hop counts of two request flows: the files a request crosses from its handler to the log.

Each flow runs once, in process, against a ``BrokerCore`` over memory logs, from the protocol
handler's coroutine (the kio request already decoded) to its typed response:

* TxnShareAcknowledge (KIP-1289) of ``--partitions`` partitions, 5 acquired records each,
  whose share-state partitions are in the ongoing transaction (``--state-partitions`` sets
  how many share-state partitions there are: 1 puts every key on one, one append per request);
* TxnOffsetCommit of one offset after AddOffsetsToTxn.

Every Python function call into a module of the tree is recorded (``sys.setprofile``); it
prints the modules that ran, the calls whose caller and callee are in different modules (the
hops), how often each module was entered from another, and the verify calls, appends and
fsyncs.  docs/design.md ("Hops of the transactional staging RPCs") holds the figures.

    python bench/hop_count.py [--partitions N] [--state-partitions N] [--files]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coordinator.broker import BrokerCore  # noqa: E402
from coordinator.log.memory_log import MemoryStorage  # noqa: E402
from coordinator.protocol.handlers import Handlers  # noqa: E402
from coordinator.protocol.wire import DecodedRequest  # noqa: E402
from coordinator.share.manager import ShareFetchOutcome  # noqa: E402
from txn.api_keys import ApiKey  # noqa: E402
from txn.batch import build_batch  # noqa: E402
from txn.clock import ManualClock  # noqa: E402
from txn.config import BrokerConfig  # noqa: E402
from txn.errors import ErrorCode  # noqa: E402
from txn.ids import TopicIdPartition, TopicPartition  # noqa: E402
from txn.kip1289_schema import load_request  # noqa: E402
from txn.wire_render import render  # noqa: E402

GROUP, TID = "g", "copier"
Call = tuple[str | None, str, str]  # caller module, callee module, function


def _module(filename: str) -> str | None:
    if not filename.endswith(".py"):
        return None  # frozen modules, code that dataclasses generate
    path = Path(filename).resolve()
    if not path.is_relative_to(ROOT) or path.is_relative_to(ROOT / "bench"):
        return None
    return str(path.relative_to(ROOT))


def _traced(run: Callable[[], object]) -> list[Call]:
    calls: list[Call] = []

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call" or (callee := _module(frame.f_code.co_filename)) is None:
            return
        caller = _module(frame.f_back.f_code.co_filename) if frame.f_back else None
        calls.append((caller, callee, frame.f_code.co_qualname))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls


def _handle(core: BrokerCore, key: ApiKey, version: int, body: dict[str, Any]) -> list[Call]:
    async def no_wait(_seconds: float) -> None:
        return None

    handler = Handlers(core, "127.0.0.1", 9092, no_wait).table[key]
    request = DecodedRequest(key, version, 7, "hops", render(load_request(key, version), body))
    return _traced(lambda: asyncio.run(handler(request)))


def _core(state_partitions: int | None = None) -> tuple[BrokerCore, ManualClock]:
    clock = ManualClock()
    settings = {"group.share.min.record.lock.duration.ms": "1000"}
    if state_partitions is not None:
        settings["share.coordinator.state.topic.num.partitions"] = str(state_partitions)
    config = BrokerConfig(settings)
    return BrokerCore(MemoryStorage(), clock, config, random.Random(3)), clock


def txn_share_acknowledge(partitions: int, state_partitions: int | None = None) -> list[Call]:
    core, clock = _core(state_partitions)
    assert core.create_topic("in", partitions, 1).error is ErrorCode.NONE
    for p in range(partitions):
        batch = build_batch([(None, b"v")] * 5, timestamp_ms=clock.now_ms())
        assert core.produce(TopicPartition("in", p), batch, None).error is ErrorCode.NONE
    core.share.groups.alter_group_configs(GROUP, {"share.auto.offset.reset": "earliest"})
    assert core.share.heartbeat(GROUP, "m1", 0, None, ["in"]).error is ErrorCode.NONE
    info = core.topics.get("in")
    assert info is not None
    tips = [TopicIdPartition(info.topic_id, p) for p in range(partitions)]
    error, session = core.share.open_or_check_session(GROUP, "m1", 0, connection_id=1)
    assert session is not None, error
    session.add(tips)
    fetched = ShareFetchOutcome(ErrorCode.NONE)
    core.share.acquire(GROUP, "m1", session, 500, 1 << 20, fetched)
    assert fetched.acquired_count == 5 * partitions
    init = core.txn_coordinator.init_producer_id(TID, 60000)
    state = list(
        dict.fromkeys(core.share.state_partition_of(GROUP, t.topic_id, t.partition) for t in tips)
    )
    added = core.txn_coordinator.add_partitions_to_txn(
        TID, init.producer_id, init.producer_epoch, state
    )
    assert set(added.values()) == {ErrorCode.NONE}
    ack = {"first_offset": 0, "last_offset": 4, "acknowledge_type": 1}
    body = {
        "transactional_id": TID,
        "group_id": GROUP,
        "member_id": "m1",
        "producer_id": init.producer_id,
        "producer_epoch": init.producer_epoch,
        "topics": [
            {
                "topic_id": info.topic_id,
                "partitions": [
                    {"partition": p, "acknowledgement_batches": [ack]} for p in range(partitions)
                ],
            }
        ],
    }
    return _handle(core, ApiKey.TXN_SHARE_ACKNOWLEDGE, 0, body)


def txn_offset_commit() -> list[Call]:
    core, _clock = _core()
    assert core.create_topic("in", 1, 1).error is ErrorCode.NONE
    init = core.txn_coordinator.init_producer_id(TID, 60000)
    assert core.add_offsets_to_txn(TID, init.producer_id, init.producer_epoch) is ErrorCode.NONE
    offset = {"partition_index": 0, "committed_offset": 3, "committed_leader_epoch": -1}
    body = {
        "transactional_id": TID,
        "group_id": GROUP,
        "producer_id": init.producer_id,
        "producer_epoch": init.producer_epoch,
        "generation_id": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": "in", "partitions": [{**offset, "committed_metadata": "m"}]}],
    }
    return _handle(core, ApiKey.TXN_OFFSET_COMMIT, 3, body)


def report(name: str, calls: list[Call], show_files: bool) -> None:
    modules = list(dict.fromkeys(callee for _, callee, _ in calls))
    hops = [(a, b) for a, b, _ in calls if a != b]
    entered = Counter(b for _, b in hops)
    named = Counter(function.rpartition(".")[2] for _, _, function in calls)
    fsyncs = sum(
        1 for _, b, f in calls if b == "coordinator/log/memory_log.py" and f.endswith(".flush")
    )
    own = sum(1 for m in modules if m.startswith("coordinator/"))
    print(
        f"{name}: {len(modules)} modules ({own} in coordinator/, {len(modules) - own} in txn/), "
        f"{len(hops)} hops, {len(calls)} calls; verify {named['verify_partitions']}, "
        f"appends {named['append_durably']}, fsyncs {fsyncs}; the share manager entered "
        f"{entered['coordinator/share/manager.py']} times"
    )
    if show_files:
        for module in modules:
            print(f"    {module} (entered {entered[module]} times)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1, help="TxnShareAcknowledge's")
    parser.add_argument(
        "--state-partitions",
        type=int,
        default=None,
        help="share.coordinator.state.topic.num.partitions (default: the broker's, 50); "
        "1 puts every partition's state in one state partition",
    )
    parser.add_argument("--files", action="store_true", help="list the modules")
    args = parser.parse_args()
    calls = txn_share_acknowledge(args.partitions, args.state_partitions)
    report("TxnShareAcknowledge", calls, args.files)
    report("TxnOffsetCommit", txn_offset_commit(), args.files)


if __name__ == "__main__":
    main()
