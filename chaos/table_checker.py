"""T1, the compacted-table invariant (``chaos.table_workload`` describes the workload).

After the drain, a read_committed read of the table from its log start gives, for every key,
the value of the latest write acknowledged to the writer, or a later write of that key (one
whose answer was lost); a key whose latest acknowledged write is a tombstone may be absent,
but never shows an older value.  Every record read was written with that key and value.
Records removed by policy are not lost: superseded values and old tombstones the cleaner
removed, and anything below the final log start offset (``compact,delete`` retention).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from chaos.history import FINAL, Entry, pairs

NAMES = {"T1": "compacted table keeps each key's latest acknowledged value"}
Report = Callable[[str, str, Iterable[int]], None]


def check_table(entries: Sequence[Entry], report: Report) -> None:
    """T1 over the table writer's history and the final read (nothing without a table)."""
    final = next((e for e in entries if e.process == FINAL and e.f == "table"), None)
    if final is None:
        return
    written: set[tuple[str, str | None]] = set()
    latest_acked: dict[str, tuple[int, str | None, int]] = {}  # key -> (offset, value, entry)
    for invoke, done in pairs(entries):
        if invoke.f != "table-write":
            continue
        records = invoke.value["records"]
        written.update((str(k), v) for k, v in records)
        if done is None or done.type != "ok":
            continue
        base = int(done.value["offset"])
        for delta, (key, value) in enumerate(records):
            offset = base + delta
            if key not in latest_acked or latest_acked[key][0] < offset:
                latest_acked[key] = (offset, value, invoke.index)
    log_start = int(final.value.get("log_start", 0))
    final_latest: dict[str, tuple[int, str | None]] = {}
    for offset, key, value in final.value["records"]:
        if (key, value) not in written:
            report("T1", f"table record {offset} {key}={value!r} was never written", [final.index])
        if key not in final_latest or final_latest[key][0] < offset:
            final_latest[key] = (offset, value)
    for key, (offset, value, index) in sorted(latest_acked.items()):
        seen = final_latest.get(key)
        if seen is None:
            if value is not None and offset >= log_start:
                report(
                    "T1",
                    f"key {key}: its latest acknowledged value {value!r} (offset {offset}) is gone",
                    [index, final.index],
                )
        elif seen[0] < offset:
            report(
                "T1",
                f"key {key}: reads {seen[1]!r} (offset {seen[0]}) although {value!r} was "
                f"acknowledged at offset {offset}",
                [index, final.index],
            )
        elif seen[0] == offset and seen[1] != value:
            report("T1", f"key {key}: offset {offset} reads {seen[1]!r}, not {value!r}", [index])
