"""Hand-built histories for the checker's unit tests.

``Story`` writes a small, valid history -- one input partition, two inputs, one transaction
that processes both and commits -- and lets a test change one thing to break one invariant.
"""

from __future__ import annotations

from typing import Any

from chaos.checker import Violation, check
from chaos.history import BROKER, FINAL, NEMESIS, History

IN = "in"
OUT = "out"


def w0(epoch: int = 0) -> dict[str, Any]:
    """Transactional id w0's producer (id 1) at ``epoch``."""
    return {"tid": "w0", "pid": 1, "epoch": epoch}


class Story:
    def __init__(self, limit: int = 3) -> None:
        self.h = History(0)
        self.t = 0
        self.limit = limit
        self.inputs: dict[int, list[list[Any]]] = {0: [[0, "i0"], [1, "i1"]]}
        self.committed: dict[int, list[list[Any]]] = {0: []}
        self.batches: dict[int, list[list[Any]]] = {0: []}
        self.lso: dict[int, list[int]] = {0: [0, 0]}
        self.share: dict[str, Any] = {"0": {"start": 2, "end": 2, "states": []}}
        self.txns: dict[str, Any] = {
            "w0": {"state": "CompleteCommit", "pending": None, "pid": 1, "epoch": 0, "markers": []}
        }
        self.open_txns: list[int] = []
        self.quiescent = True
        self.waiting: str | None = None  # what a drain that was not quiescent waited for
        self.event(NEMESIS, "setup", {"delivery_limit": limit})
        self.event(BROKER, "broker-start", {"incarnation": 1, "open": []})

    def tick(self) -> int:
        self.t += 1
        return self.t

    def event(self, process: str, f: str, value: Any) -> int:
        self.h.event(self.tick(), process, f, value)
        return len(self.h.entries) - 1

    def op(self, process: str, f: str, value: Any, result: str, out: Any) -> int:
        op = self.h.invoke(self.tick(), process, f, value)
        self.h.complete(self.tick(), op, result, out)  # type: ignore[arg-type]
        return len(self.h.entries) - 1

    def acquire(self, offsets: tuple[int, int], dc: int = 1, member: str = "m") -> int:
        return self.event(
            BROKER,
            "acquired",
            {"member": member, "topic": IN, "partition": 0, "ranges": [[*offsets, dc]]},
        )

    def produced(
        self, offset: int, ident: dict[str, Any] | None = None, *, seq: int = 0, dup: bool = False
    ) -> int:
        """The broker appended a batch of the transaction's to OUT-0 at ``offset``."""
        value = {**(ident or w0()), "topic": OUT, "partition": 0, "offset": offset}
        return self.event(BROKER, "produced", {**value, "seq": seq, "dup": dup})

    def pending(
        self, batches: list[list[int]], ident: dict[str, Any] | None = None, **more: Any
    ) -> int:
        """The broker staged member m's transactional acknowledgement of ``batches`` of IN-0."""
        value = {
            **(ident or w0()),
            "member": "m",
            "topic": IN,
            "partition": 0,
            "state_partition": 0,
            "batches": batches,
            **more,
        }
        return self.event(BROKER, "pending", value)

    def txn(
        self,
        tag: str,
        inputs: list[tuple[int, str]],
        *,
        outcome: str = "commit",
        result: str = "ok",
        pid: int = 1,
        epoch: int = 0,
        visible: bool = True,
        offset: int | None = None,
        two_phase: bool = False,
    ) -> dict[str, Any]:
        """A transaction copying ``inputs`` (offset, value) to OUT-0, with its broker events."""
        values = [f"{v}@0:{o}|{tag}" for o, v in inputs]
        ident = {"tag": tag, "tid": "w0", "pid": pid, "epoch": epoch}
        txn_op = self.h.invoke(
            self.tick(),
            "w0.1",
            "txn",
            {
                **ident,
                "2pc": two_phase,
                "member": "m",
                "inputs": [[0, o, v, 1, 1] for o, v in inputs],
                "outputs": {"0": values},
            },
        )
        base = offset if offset is not None else sum(len(b) for b in self.committed.values()) * 2
        self.op(
            "w0.1",
            "produce",
            {**ident, "partition": 0, "seq": 0, "values": values},
            "ok",
            {"offset": base},
        )
        produced = self.produced(base, ident)
        first, last = inputs[0][0], inputs[-1][0]
        pending = self.pending([[first, last, 1]], ident)
        self.op(
            "w0.1",
            "txn-ack",
            {**ident, "member": "m", "acks": [[IN, 0, first, last, 1]]},
            "ok",
            {"errors": {"in-0": "NONE"}},
        )
        commit = outcome == "commit"
        self.event(
            BROKER,
            "txn-state",
            {
                "tid": "w0",
                "state": "PrepareCommit" if commit else "PrepareAbort",
                "pid": pid,
                "epoch": epoch,
            },
        )
        marker = self.event(
            BROKER,
            "marker",
            {
                "tid": "w0",
                "pid": pid,
                "epoch": epoch,
                "commit": commit,
                "how": "direct",
                "partitions": [["__share_group_state", 0, "NONE"], [OUT, 0, "NONE"]],
            },
        )
        self.event(
            BROKER,
            "txn-state",
            {
                "tid": "w0",
                "state": "CompleteCommit" if commit else "CompleteAbort",
                "pid": pid,
                "epoch": epoch,
            },
        )
        out = {"outcome": outcome} if result == "ok" else {"error": "x"}
        self.h.complete(self.tick(), txn_op, result, out)  # type: ignore[arg-type]
        self.batches[0].append([base, base + len(values) - 1, pid, epoch, True, False])
        if visible:
            self.committed[0].extend([base + k, v] for k, v in enumerate(values))
        return {"produced": produced, "pending": pending, "marker": marker}

    def finish(self) -> list[Violation]:
        self.event(
            FINAL, "input", {"topic": IN, "partitions": {str(p): r for p, r in self.inputs.items()}}
        )
        self.event(
            FINAL,
            "output",
            {
                "topic": OUT,
                "committed": {str(p): r for p, r in self.committed.items()},
                "lso": {str(p): v for p, v in self.lso.items()},
            },
        )
        self.event(
            FINAL,
            "output-log",
            {"topic": OUT, "batches": {str(p): b for p, b in self.batches.items()}},
        )
        self.event(
            FINAL,
            "share",
            {"partitions": self.share, "open_txns": self.open_txns, "limit": self.limit},
        )
        final: dict[str, Any] = {"txns": self.txns, "quiescent": self.quiescent}
        if self.waiting is not None:
            final["waiting"] = self.waiting
        self.event(FINAL, "txns", final)
        return check(self.h.entries, seed=0)


def valid() -> Story:
    story = Story()
    story.acquire((0, 1))
    story.txn("w0.1.1", [(0, "i0"), (1, "i1")])
    return story


def invariants(violations: list[Violation]) -> set[str]:
    return {v.invariant for v in violations}
