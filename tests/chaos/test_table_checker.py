"""T1: the compacted table keeps each key's latest acknowledged value (chaos.table_checker)."""

from __future__ import annotations

from typing import Any

from chaos.history import FINAL, History
from chaos.table_checker import check_table


def run(
    writes: list[tuple[list[list[Any]], int | None]], final: list[list[Any]], log_start: int = 0
) -> list[str]:
    """``writes``: (records, offset if acknowledged else None); the final read's records."""
    history = History(0)
    for t, (records, offset) in enumerate(writes):
        op = history.invoke(t, "table", "table-write", {"records": records})
        if offset is None:
            history.complete(t, op, "info", {"error": "timeout"})
        else:
            history.complete(t, op, "ok", {"offset": offset})
    history.event(99, FINAL, "table", {"records": final, "log_start": log_start, "cleaner_runs": 1})
    found: list[str] = []
    check_table(history.entries, lambda inv, msg, _entries: found.append(f"{inv} {msg}"))
    return found


WRITES = [
    ([["a", "1"], ["b", "1"]], 0),  # offsets 0, 1
    ([["a", "2"]], 2),
    ([["b", None]], 3),  # b deleted
    ([["a", "3"]], None),  # unknown outcome: landed at 4
]


def test_a_compacted_read_with_the_latest_values_is_fine() -> None:
    assert run(WRITES, [[3, "b", None], [4, "a", "3"]]) == []
    assert run(WRITES, [[2, "a", "2"]]) == []  # the unacknowledged write may be lost
    assert run(WRITES, [[4, "a", "3"]]) == []  # b's tombstone may be gone


def test_a_lost_latest_value_or_an_older_one_is_caught() -> None:
    assert any("gone" in m for m in run(WRITES, [[3, "b", None]]))
    assert any("acknowledged at offset 2" in m for m in run(WRITES, [[0, "a", "1"]]))
    # b's tombstone was acknowledged: its older value must not come back
    assert any(m.startswith("T1 key b") for m in run(WRITES, [[1, "b", "1"], [2, "a", "2"]]))
    assert any("never written" in m for m in run(WRITES, [[2, "a", "2"], [5, "a", "x"]]))


def test_what_retention_removed_is_not_owed() -> None:
    # compact,delete: retention moved the log start past a's latest value
    assert run(WRITES, [[4, "a", "3"]], log_start=3) == []
    assert run(WRITES, [], log_start=5) == []
    assert any("gone" in m for m in run(WRITES, [], log_start=2))  # a's 2 is above the start
