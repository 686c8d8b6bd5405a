"""The consumer-group invariants: exactly-once with ``sendOffsetsToTransaction``.

Judged from the history the consumer-group workers (``chaos.group_workload``) and the final
reads (``chaos.group_reads``) leave:

* **C1 committed-and-reprocessed** -- no input has two visible outputs in the group output
  topic: an input whose offset was committed is never processed again into a second visible
  output (a zombie's commit, an offset read while another transaction's was pending, offsets
  that became visible before their transaction committed...);
* **C2 offsets match outputs** -- for each input partition, every input below the group's
  committed offset has its output visible and none at or above it does: outputs and offsets
  of one transaction become visible together; after the drain the committed offset is the log
  end and no transactional offset is pending;
* **C3 indeterminacy honesty** -- a consumer-group transaction reported committed has all its
  outputs visible, one reported aborted or failed has none;
* plus **I14** for the group output (well-formed values naming real inputs, every acknowledged
  produce still in the log).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from chaos.history import BROKER, FINAL, NEMESIS, Entry, pairs, parse_output

NAMES: dict[str, str] = {
    "C1": "consumer group: committed and re-processed",
    "C2": "consumer group: offsets match outputs",
    "C3": "consumer group: indeterminacy honesty",
}

Key = tuple[int, int]  # (input partition, offset)
Report = Callable[[str, str, Iterable[int]], None]


def check_groups(entries: Sequence[Entry], report: Report) -> None:
    """Report every consumer-group violation in ``entries`` (nothing without group workers)."""
    finals: dict[str, Entry] = {}
    group_topic: str | None = None
    quiescent = False
    for entry in entries:
        if entry.type != "event":
            continue
        if entry.process == FINAL:
            finals[entry.f] = entry
            if entry.f == "txns":
                quiescent = bool(entry.value.get("quiescent"))
        elif entry.process == NEMESIS and entry.f == "setup":
            group_topic = entry.value.get("group_output_topic")
    output = finals.get("group-output")
    if group_topic is None or output is None:
        return
    inputs = _inputs(finals.get("input"))
    visible = _visible(output, inputs, report)
    _check_offsets(finals.get("group-offsets"), inputs, visible, quiescent, report)
    _check_txns(entries, visible, output, report)
    _check_durability(entries, output, group_topic, report)


def _inputs(final: Entry | None) -> dict[Key, str]:
    if final is None:
        return {}
    return {
        (int(partition), int(offset)): value
        for partition, records in final.value["partitions"].items()
        for offset, value in records
    }


def _visible(output: Entry, inputs: dict[Key, str], report: Report) -> dict[Key, list[str]]:
    """C1 and I14 over the committed group output: input -> tags of its visible outputs."""
    visible: dict[Key, list[str]] = defaultdict(list)
    for partition, records in sorted(output.value["committed"].items()):
        for _offset, value in records:
            parsed = parse_output(value)
            if parsed is None:
                report("I14", f"malformed group output value {value!r}", [output.index])
                continue
            input_value, in_partition, in_offset, tag = parsed
            key = (in_partition, in_offset)
            if inputs and inputs.get(key) != input_value:
                report(
                    "I14",
                    f"group output {value!r} (partition {partition}) names input {key} ="
                    f" {input_value}, but the input log holds {inputs.get(key)!r} there",
                    [output.index],
                )
            visible[key].append(tag)
    for key, tags in sorted(visible.items()):
        if len(tags) > 1:
            report(
                "C1",
                f"input {inputs.get(key, '?')} at {key} has {len(tags)} visible outputs in the"
                f" group output (transactions {', '.join(tags)})",
                [output.index],
            )
    return visible


def _check_offsets(
    final: Entry | None,
    inputs: dict[Key, str],
    visible: dict[Key, list[str]],
    quiescent: bool,
    report: Report,
) -> None:
    if final is None:
        return
    committed = {int(p): int(o) for p, o in final.value["offsets"].items()}
    ends: dict[int, int] = defaultdict(int)
    for partition, offset in inputs:
        ends[partition] = max(ends[partition], offset + 1)
    for partition in sorted(ends):
        offset = max(committed.get(partition, -1), 0)
        below = [k for k in inputs if k[0] == partition and k[1] < offset and k not in visible]
        if below:
            report(
                "C2",
                f"input partition {partition}: the group committed offset {offset} but"
                f" {len(below)} input(s) below it have no visible output, e.g. {min(below)}"
                " (skipped)",
                [final.index],
            )
        above = sorted(k for k in visible if k[0] == partition and k[1] >= offset)
        if above:
            report(
                "C2",
                f"input partition {partition}: {len(above)} input(s) at or above the committed"
                f" offset {offset} have visible outputs, e.g. {above[0]} (their offsets were"
                " not committed with them)",
                [final.index],
            )
        if quiescent and offset != ends[partition]:
            report(
                "I13",
                f"input partition {partition}: the consumer group committed {offset}, the log"
                f" ends at {ends[partition]} after the drain",
                [final.index],
            )
    if final.value.get("pending"):
        report(
            "I13",
            f"transactional offsets still pending for partitions {final.value['pending']}"
            " after the drain",
            [final.index],
        )


def _check_txns(
    entries: Sequence[Entry], visible: dict[Key, list[str]], output: Entry, report: Report
) -> None:
    tags_visible: dict[str, int] = defaultdict(int)
    for tags in visible.values():
        for tag in tags:
            tags_visible[tag] += 1
    for invoke, done in pairs(entries):
        if invoke.f != "group-txn":
            continue
        tag = str(invoke.value["tag"])
        wanted = sum(len(vs) for vs in invoke.value["outputs"].values())
        seen = tags_visible.get(tag, 0)
        where = [invoke.index, output.index] + ([done.index] if done is not None else [])
        if done is None or done.type == "info":
            continue
        outcome = (done.value or {}).get("outcome") if done.type == "ok" else "failed"
        if outcome == "commit" and seen != wanted:
            report(
                "C3",
                f"consumer-group transaction {tag} was reported committed but {seen} of its"
                f" {wanted} outputs are visible",
                where,
            )
        elif outcome in ("abort", "failed") and seen:
            report(
                "C3",
                f"consumer-group transaction {tag} was reported {outcome} but {seen} of its"
                " outputs are visible",
                where,
            )


def _check_durability(entries: Sequence[Entry], output: Entry, topic: str, report: Report) -> None:
    batches: dict[int, dict[int, int]] = {}
    for partition, rows in output.value["batches"].items():
        batches[int(partition)] = {int(row[0]): int(row[2]) for row in rows}
    for e in entries:
        if e.process != BROKER or e.f != "produced":
            continue
        v: dict[str, Any] = e.value
        if v.get("topic") != topic:
            continue
        pid = batches.get(int(v["partition"]), {}).get(int(v["offset"]))
        if pid != int(v["pid"]):
            report(
                "I14",
                f"an acknowledged produce of producer {v['pid']} at"
                f" {topic}-{v['partition']}@{v['offset']} is not in the log (lost write)",
                [e.index, output.index],
            )
