"""The checker: judges a history (``chaos.history``) against the invariant catalogue.

It reads nothing but the history: client operations (invoke / ok / fail / info), the broker-side
observations the simulator recorded (acquisitions, pending acknowledgements, marker
applications, accepted produces, producer epochs, coordinator state changes, restarts), and the
final reads (the input log, the output as a read_committed consumer sees it, the output log's
batches, the share partitions' states, the coordinator's transactions).

Implemented invariants (numbering of ``../shared/reference/chaos-and-recovery.md`` (b)):

* **I1 ack atomicity** -- a record ACCEPTed in a transaction whose COMMIT marker reached its
  share-state partition is never delivered again;
* **I2 output atomicity** -- a transaction's confirmed outputs are all visible or none is;
  a committed ACCEPT has its output visible;
* **I3 aborted read (G1a)** -- no output of a transaction known to be aborted is visible, and
  everything the concurrent read_committed consumer saw during the run is in the final
  committed output (it never reads what is later aborted);
* **I4 exactly-once per input** -- no input has two visible outputs;
* **I5 no lost input** -- every input is visible in the output unless it reached the delivery
  count limit (archived);
* **I6 abort revert** -- a record whose pending ACCEPT was aborted is delivered again (or was at
  the limit);
* **I7 pending exclusivity** -- a TX_PENDING record is never acquired;
* **I8 delivery-count sanity** -- delivery counts stay in 1..limit and, within one broker
  incarnation, each delivery of a record counts once: never down, never up by more than one;
* **I9 epoch fencing** -- no produce or pending acknowledgement of (pid, e) is accepted after
  anything of (pid, e' > e) was;
* **I10 legal coordinator transitions** -- consecutive observed states of a transactional id
  follow the transition table (at most two steps apart: observations are taken between events)
  and its epoch never goes down;
* **I11 decision durability** -- no marker contradicts the PrepareCommit/PrepareAbort it follows;
* **I13 no hanging transaction** -- after the drain every transaction is complete, every LSO
  equals its high watermark, no share acknowledgement is pending and every input was consumed;
* **I14 log sanity** -- output values are well formed and refer to real inputs, no value twice,
  offsets increase, every acknowledged produce is still in the log (durability), inputs are
  unique;
* **I15 indeterminacy honesty** -- a transaction reported committed has all its outputs visible;
  one reported failed has none;
* **I16 recovery-tool soundness** -- from the recovery tool's runs (``recovery-tool``
  operations of the real-process mode's operator) and their audit lines (``audit`` events):
  a commit is begun only with evidence (a PreparedTxnState the operator supplied, naming the
  transaction, whose client decided commit), never on a transaction whose client decided or
  completed abort; an abort or force-terminate is never begun on a transaction in
  PrepareCommit or CompleteCommit, nor applied to one whose client completed it as committed.
  The states it leaves are judged by the other checks (I2, I4, I5, I13).

With consumer-group workers, ``chaos.group_checker`` adds C1 (committed and re-processed), C2
(offsets match outputs) and C3 (indeterminacy honesty) for the group output topic.

Not implemented: I12 (single leadership: one broker, nothing to check).  A broker exception
other than a simulated crash is reported as ``E0`` (robustness).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaos.group_checker import check_groups
from chaos.history import BROKER, FINAL, NEMESIS, READER, Entry, pairs, parse_output
from chaos.invariants import (
    ACCEPT,
    IDLE,
    NAMES,
    TERMINAL_RECORD_STATES,
    Report,
    Violation,
    legal_steps,
)
from chaos.recovery_checker import AUDIT, RECOVERY_TOOL, recovery_tool_violations
from chaos.table_checker import check_table

__all__ = [
    "AUDIT",
    "NAMES",
    "RECOVERY_TOOL",
    "Checker",
    "Violation",
    "check",
    "legal_steps",
    "parse_output",
]


@dataclass
class _Txn:
    tag: str
    invoke: Entry
    completion: Entry | None = None
    completes: list[tuple[Entry, Entry | None]] = field(default_factory=list)
    produces: list[tuple[Entry, Entry | None]] = field(default_factory=list)
    acks: list[tuple[Entry, Entry | None]] = field(default_factory=list)

    @property
    def status(self) -> str:
        """committed | aborted | failed | unknown (from the client's point of view)."""
        c = self.completion
        if c is None:
            return "unknown"
        if c.type == "ok":
            outcome = (c.value or {}).get("outcome")
            if outcome == "commit":
                return "committed"
            if outcome == "abort":
                return "aborted"
            if outcome == "prepared":
                for _inv, done in self.completes:
                    if done is not None and done.type == "ok":
                        got = (done.value or {}).get("outcome")
                        return "committed" if got == "commit" else "aborted"
                return "unknown"
            return "unknown"
        if c.type == "fail":
            return "failed"
        return "unknown"

    def status_entries(self) -> list[int]:
        out = [self.invoke.index]
        if self.completion is not None:
            out.append(self.completion.index)
        for inv, done in self.completes:
            out.append(inv.index)
            if done is not None:
                out.append(done.index)
        return out

    def confirmed_outputs(self) -> dict[str, tuple[int, int, int]]:
        """value -> (partition, offset, produce entry) for produces that completed ok."""
        out: dict[str, tuple[int, int, int]] = {}
        for inv, done in self.produces:
            if done is not None and done.type == "ok":
                offset = int((done.value or {}).get("offset", -1))
                for value in inv.value["values"]:
                    out[value] = (int(inv.value["partition"]), offset, done.index)
        return out

    def failed_outputs(self) -> set[str]:
        out: set[str] = set()
        for inv, done in self.produces:
            if done is not None and done.type == "fail":
                out.update(inv.value["values"])
        return out


Key = tuple[int, int]  # (input partition, offset)


class Checker:
    """One pass over a history."""

    def __init__(self, entries: Sequence[Entry], seed: int | None = None) -> None:
        self.entries = entries
        self.report = Report(seed)
        self.limit = 0
        self.finals: dict[str, Entry] = {}
        self.txns: dict[str, _Txn] = {}
        self.broker_events: list[Entry] = []
        self.acquisitions: dict[Key, list[tuple[int, int, int]]] = defaultdict(list)
        self.max_dc: dict[Key, int] = defaultdict(int)
        self.quiescent = False
        self.lso: dict[int, int] = {}  # output partition -> final last stable offset
        self.reads: list[Entry] = []  # the concurrent read_committed consumer's polls
        self.output_topic: str | None = None

    def _pinned(self, partition: int, offset: int) -> bool:
        """Whether an output at ``offset`` may be invisible only because the LSO is pinned."""
        lso = self.lso.get(partition)
        return lso is not None and offset >= lso

    # -- parsing ----------------------------------------------------------------------------------

    def _parse(self) -> None:
        incarnation = 0
        for entry in self.entries:
            if entry.type != "event":
                continue
            if entry.process == NEMESIS and entry.f == "setup":
                self.limit = int(entry.value.get("delivery_limit", 0))
                self.output_topic = entry.value.get("output_topic")
            elif entry.process == FINAL:
                self.finals[entry.f] = entry
            elif entry.process == READER:
                self.reads.append(entry)
            elif entry.process == BROKER:
                self.broker_events.append(entry)
                if entry.f == "broker-start":
                    incarnation = int(entry.value["incarnation"])
                elif entry.f == "acquired":
                    v = entry.value
                    for first, last, dc in v["ranges"]:
                        for offset in range(int(first), int(last) + 1):
                            key = (int(v["partition"]), offset)
                            self.acquisitions[key].append((entry.index, int(dc), incarnation))
                            self.max_dc[key] = max(self.max_dc[key], int(dc))
        by_tag: dict[str, _Txn] = {}
        subops: list[tuple[Entry, Entry | None]] = []
        for invoke, done in pairs(self.entries):
            if invoke.f == "txn":
                tag = str(invoke.value["tag"])
                by_tag[tag] = _Txn(tag, invoke, done)
            elif invoke.f in ("produce", "txn-ack", "complete"):
                subops.append((invoke, done))
        for invoke, done in subops:
            txn = by_tag.get(str(invoke.value.get("tag")))
            if txn is None:
                continue
            if invoke.f == "produce":
                txn.produces.append((invoke, done))
            elif invoke.f == "txn-ack":
                txn.acks.append((invoke, done))
            else:
                txn.completes.append((invoke, done))
        self.txns = by_tag
        txns = self.finals.get("txns")
        self.quiescent = bool(txns is not None and txns.value.get("quiescent"))
        output = self.finals.get("output")
        if output is not None:
            for partition, (lso, hw) in output.value.get("lso", {}).items():
                if lso < hw:
                    self.lso[int(partition)] = int(lso)

    # -- checks -----------------------------------------------------------------------------------

    def run(self) -> list[Violation]:
        self._parse()
        self._check_exceptions()
        inputs = self._check_inputs()
        visible = self._check_output(inputs)
        self._check_reads()
        self._check_txns(visible)
        self._check_lost(inputs, visible)
        self._check_pending_and_acks(visible)
        self._check_delivery_counts()
        self._check_epochs()
        self._check_transitions()
        self._check_durability()
        self._check_hanging()
        self._check_recovery_tool()
        check_groups(self.entries, self.report.add)
        check_table(self.entries, self.report.add)
        return self.report.finish()

    def _check_exceptions(self) -> None:
        for e in self.broker_events:
            if e.f == "exception":
                self.report.add("E0", f"{e.value.get('where')}: {e.value.get('error')}", [e.index])

    def _check_inputs(self) -> dict[Key, str]:
        final = self.finals.get("input")
        inputs: dict[Key, str] = {}
        if final is None:
            return inputs
        seen: dict[str, Key] = {}
        for partition, records in sorted(final.value["partitions"].items()):
            for offset, value in records:
                key = (int(partition), int(offset))
                inputs[key] = value
                if value in seen:
                    self.report.add(
                        "I14",
                        f"input value {value} is in the input log twice ({seen[value]} and {key}):"
                        " the idempotent feeder was duplicated",
                        [final.index],
                    )
                seen[value] = key
        return inputs

    def _check_output(self, inputs: dict[Key, str]) -> dict[Key, list[tuple[str, str, int]]]:
        """Visible outputs by input: key -> [(tag, value, output partition)]."""
        final = self.finals.get("output")
        visible: dict[Key, list[tuple[str, str, int]]] = defaultdict(list)
        if final is None:
            return visible
        values_seen: set[str] = set()
        for partition, records in sorted(final.value["committed"].items()):
            last = -1
            for offset, value in records:
                if offset <= last:
                    self.report.add(
                        "I14",
                        f"output partition {partition}: offset {offset} after {last}",
                        [final.index],
                    )
                last = offset
                parsed = parse_output(value)
                if parsed is None:
                    self.report.add("I14", f"malformed output value {value!r}", [final.index])
                    continue
                input_value, in_partition, in_offset, tag = parsed
                key = (in_partition, in_offset)
                if inputs and inputs.get(key) != input_value:
                    self.report.add(
                        "I14",
                        f"output {value!r} names input {key} = {input_value} but the input log"
                        f" holds {inputs.get(key)!r} there",
                        [final.index],
                    )
                if value in values_seen:
                    self.report.add(
                        "I14", f"output value {value!r} is visible twice", [final.index]
                    )
                values_seen.add(value)
                visible[key].append((tag, value, int(partition)))
        for key, outs in sorted(visible.items()):
            if len(outs) > 1:
                tags = [t for t, _v, _p in outs]
                entries = [final.index]
                for tag in tags:
                    txn = self.txns.get(tag)
                    if txn is not None:
                        entries.extend(txn.status_entries())
                self.report.add(
                    "I4",
                    f"input {inputs.get(key, '?')} at {key} has {len(outs)} visible outputs"
                    f" (transactions {', '.join(tags)})",
                    entries,
                )
        return visible

    def _check_reads(self) -> None:
        """I3: what a read_committed consumer saw during the run must stay committed."""
        final = self.finals.get("output")
        if final is None or not self.reads:
            return
        committed: dict[int, set[str]] = {
            int(p): {v for _o, v in records} for p, records in final.value["committed"].items()
        }
        for entry in self.reads:
            partition = int(entry.value["partition"])
            final_values = committed.get(partition, set())
            for offset, value in entry.value["records"]:
                if value in final_values:
                    continue
                parsed = parse_output(value)
                tag = parsed[3] if parsed is not None else "?"
                txn = self.txns.get(tag)
                entries = [entry.index, final.index]
                if txn is not None:
                    entries.extend(txn.status_entries())
                self.report.add(
                    "I3",
                    f"a read_committed consumer read {value!r} at output partition {partition}"
                    f" offset {offset} (transaction {tag}, {txn.status if txn else 'unknown'}),"
                    " which is not in the committed output",
                    entries,
                )

    def _check_txns(self, visible: dict[Key, list[tuple[str, str, int]]]) -> None:
        final = self.finals.get("output")
        if final is None:
            return
        by_tag: dict[str, set[str]] = defaultdict(set)
        for outs in visible.values():
            for tag, value, _p in outs:
                by_tag[tag].add(value)
        for tag, values in sorted(by_tag.items()):
            txn = self.txns.get(tag)
            if txn is None:
                self.report.add(
                    "I14", f"visible outputs of unknown transaction {tag}", [final.index]
                )
                continue
            status = txn.status
            entries = [final.index, *txn.status_entries()]
            if status == "aborted":
                self.report.add(
                    "I3",
                    f"{len(values)} output(s) of transaction {tag}, which was aborted, are visible",
                    entries,
                )
            elif status == "failed":
                self.report.add(
                    "I15",
                    f"transaction {tag} was reported failed (certainly not committed) but"
                    f" {len(values)} of its output(s) are visible",
                    entries,
                )
            failed = txn.failed_outputs() & values
            if failed:
                self.report.add(
                    "I15",
                    f"{len(failed)} output(s) of transaction {tag} whose produce was reported"
                    " failed are visible",
                    entries,
                )
            confirmed = txn.confirmed_outputs()
            missing = sorted(
                v for v in set(confirmed) - values if not self._pinned(*confirmed[v][:2])
            )
            if missing:
                self.report.add(
                    "I2",
                    f"transaction {tag} is torn: {len(values)} output(s) visible but"
                    f" {len(missing)} confirmed one(s) missing, e.g. {missing[0]}",
                    entries + [confirmed[m][2] for m in missing[:5]],
                )
        for tag, txn in sorted(self.txns.items()):
            if txn.status != "committed" or tag in by_tag:
                continue
            confirmed = txn.confirmed_outputs()
            if confirmed and not any(self._pinned(p, o) for p, o, _i in confirmed.values()):
                self.report.add(
                    "I15",
                    f"transaction {tag} was reported committed but none of its"
                    f" {len(confirmed)} confirmed output(s) is visible",
                    [final.index, *txn.status_entries()],
                )

    def _check_lost(
        self, inputs: dict[Key, str], visible: dict[Key, list[tuple[str, str, int]]]
    ) -> None:
        share = self.finals.get("share")
        if share is None or not inputs or self.lso:
            return  # with an LSO pinned, a missing output may only be invisible (I13 reports)
        parts = share.value.get("partitions", {})
        for key, value in sorted(inputs.items()):
            if key in visible:
                continue
            if self.limit and self.max_dc.get(key, 0) >= self.limit:
                continue  # archived at the delivery count limit
            pstate = parts.get(str(key[0]), {})
            start = int(pstate.get("start", -1))
            terminal = key[1] < start
            if not terminal:
                for offset, state, _dc in pstate.get("states", []):
                    if offset == key[1]:
                        terminal = state in TERMINAL_RECORD_STATES
                        break
            if not terminal and not self.quiescent:
                continue  # still in flight: reported as a liveness violation (I13)
            acquired = [i for i, _dc, _inc in self.acquisitions.get(key, [])]
            self.report.add(
                "I5",
                f"input {value} at {key} is consumed (terminal in the share partition) but has no"
                f" visible output and reached delivery count {self.max_dc.get(key, 0)} of"
                f" {self.limit}",
                [share.index, *acquired[-6:]],
            )

    def _check_pending_and_acks(self, visible: dict[Key, list[tuple[str, str, int]]]) -> None:
        """I1, I2 (ack side), I6, I7 from pending acks, markers, restarts and acquisitions."""
        # (state partition, pid) -> list of open stagings
        open_: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
        pending_of: dict[Key, dict[str, Any]] = {}
        resolved: list[dict[str, Any]] = []
        ack_invokes: dict[tuple[str, int, int], list[Entry]] = defaultdict(list)
        for txn in self.txns.values():
            for inv, _done in txn.acks:
                v = inv.value
                ack_invokes[(str(v["tid"]), int(v["pid"]), int(v["epoch"]))].append(inv)
        for entry in self.broker_events:
            v = entry.value
            if entry.f == "pending":
                keys: list[tuple[Key, int]] = []
                staged: set[int] | None = None
                if "staged" in v:
                    staged = {o for a, z in v["staged"] for o in range(int(a), int(z) + 1)}
                missing: list[int] = []
                for first, last, ack in v["batches"]:
                    for offset in range(int(first), int(last) + 1):
                        if staged is not None and offset not in staged:
                            missing.append(offset)
                            continue
                        keys.append(((int(v["partition"]), offset), int(ack)))
                if missing:
                    self.report.add(
                        "I15",
                        f"TxnShareAcknowledge of {v['tid']} (pid {v['pid']}, epoch {v['epoch']})"
                        f" answered NONE but offsets {missing[0]}..{missing[-1]} of partition"
                        f" {v['partition']} did not become TX_PENDING",
                        [entry.index],
                    )
                tag = self._tag_of_pending(entry, ack_invokes)
                staging = {
                    "entry": entry.index,
                    "epoch": int(v["epoch"]),
                    "keys": keys,
                    "tag": tag,
                    "tid": v["tid"],
                }
                open_[(int(v["state_partition"]), int(v["pid"]))].append(staging)
                for key, _ack in keys:
                    pending_of[key] = staging
            elif entry.f == "marker":
                for topic, partition, error in v["partitions"]:
                    if topic != "__share_group_state" or error != "NONE":
                        continue
                    slot = (int(partition), int(v["pid"]))
                    keep = []
                    for staging in open_.get(slot, []):
                        if staging["epoch"] <= int(v["epoch"]):
                            staging["outcome"] = "commit" if v["commit"] else "abort"
                            staging["resolved"] = entry.index
                            staging["time"] = entry.index
                            resolved.append(staging)
                            for key, _ack in staging["keys"]:
                                if pending_of.get(key) is staging:
                                    del pending_of[key]
                        else:
                            keep.append(staging)
                    open_[slot] = keep
            elif entry.f == "broker-start":
                recovered = {(int(sp), int(pid)) for sp, pid in v.get("open", [])}
                for slot, stagings in list(open_.items()):
                    if slot in recovered:
                        continue
                    for staging in stagings:
                        staging["outcome"] = "replayed"
                        staging["resolved"] = entry.index
                        for key, _ack in staging["keys"]:
                            if pending_of.get(key) is staging:
                                del pending_of[key]
                    open_[slot] = []
            elif entry.f == "acquired":
                for first, last, _dc in v["ranges"]:
                    for offset in range(int(first), int(last) + 1):
                        key = (int(v["partition"]), offset)
                        held = pending_of.get(key)
                        if held is not None:
                            self.report.add(
                                "I7",
                                f"record {key} acquired by {v['member']} while TX_PENDING in"
                                f" {held['tag'] or held['tid']}",
                                [held["entry"], entry.index],
                            )
        for staging in resolved:
            outcome = staging.get("outcome")
            for key, ack in staging["keys"]:
                later = [
                    i for i, _dc, _inc in self.acquisitions.get(key, []) if i > staging["resolved"]
                ]
                if outcome == "commit" and ack == ACCEPT:
                    if later:
                        self.report.add(
                            "I1",
                            f"record {key} was ACCEPTed in a committed transaction"
                            f" ({staging['tag'] or staging['tid']}) but delivered again",
                            [staging["entry"], staging["resolved"], later[0]],
                        )
                    tag = staging["tag"]
                    outs = visible.get(key, [])
                    if tag is not None and not self.lso and not any(t == tag for t, _v, _p in outs):
                        self.report.add(
                            "I2",
                            f"record {key} was ACCEPTed and committed in {tag} but that"
                            " transaction's output for it is not visible",
                            [staging["entry"], staging["resolved"]],
                        )
                elif outcome == "abort" and self.quiescent and not later:
                    if self.limit and self.max_dc.get(key, 0) >= self.limit:
                        continue
                    self.report.add(
                        "I6",
                        f"record {key}'s pending ack was aborted"
                        f" ({staging['tag'] or staging['tid']}) but it was never delivered again",
                        [staging["entry"], staging["resolved"]],
                    )

    @staticmethod
    def _tag_of_pending(
        entry: Entry, ack_invokes: dict[tuple[str, int, int], list[Entry]]
    ) -> str | None:
        v = entry.value
        candidates = ack_invokes.get((str(v["tid"]), int(v["pid"]), int(v["epoch"])), [])
        wanted = {(int(f), int(la)) for f, la, _t in v["batches"]}
        best: str | None = None
        for inv in candidates:
            if inv.index > entry.index:
                break
            got = {
                (int(a[2]), int(a[3]))
                for a in inv.value["acks"]
                if int(a[1]) == int(v["partition"])
            }
            if wanted <= got:
                best = str(inv.value["tag"])
        return best

    def _check_delivery_counts(self) -> None:
        for key, acquisitions in sorted(self.acquisitions.items()):
            previous: tuple[int, int, int] | None = None
            for index, dc, incarnation in acquisitions:
                if dc < 1 or (self.limit and dc > self.limit):
                    self.report.add(
                        "I8",
                        f"record {key} delivered with delivery count {dc} (limit {self.limit})",
                        [index],
                    )
                if previous is not None and previous[2] == incarnation and dc < previous[1]:
                    self.report.add(
                        "I8",
                        f"record {key}'s delivery count went down from {previous[1]} to {dc}",
                        [previous[0], index],
                    )
                elif previous is not None and previous[2] == incarnation and dc > previous[1] + 1:
                    # Every acquisition is observed, and each one counts exactly once.
                    self.report.add(
                        "I8",
                        f"record {key}'s delivery count jumped from {previous[1]} to {dc} between"
                        " two consecutive deliveries",
                        [previous[0], index],
                    )
                previous = (index, dc, incarnation)

    def _check_epochs(self) -> None:
        highest: dict[int, tuple[int, int]] = {}  # pid -> (epoch, entry)
        for e in self.broker_events:
            if e.f not in ("epoch", "produced", "pending", "marker"):
                continue
            if e.value.get("dup"):
                continue  # a retry answered from the duplicate window: not a new effect
            pid = int(e.value["pid"])
            epoch = int(e.value["epoch"])
            best = highest.get(pid)
            if e.f in ("produced", "pending") and best is not None and epoch < best[0]:
                what = "a produce" if e.f == "produced" else "a pending share acknowledgement"
                self.report.add(
                    "I9",
                    f"{what} of producer {pid} at epoch {epoch} was accepted after epoch"
                    f" {best[0]} was in use",
                    [best[1], e.index],
                )
            if best is None or epoch > best[0]:
                highest[pid] = (epoch, e.index)

    def _check_transitions(self) -> None:
        last: dict[str, tuple[str, int, int, int]] = {}  # tid -> (state, pid, epoch, entry)
        prepared: dict[str, tuple[str, int, int, int]] = {}
        for e in self.broker_events:
            v = e.value
            if e.f == "txn-state":
                tid = str(v["tid"])
                state, pid, epoch = str(v["state"]), int(v["pid"]), int(v["epoch"])
                before = last.get(tid)
                if before is not None and before[:3] == (state, pid, epoch):
                    continue  # observed again (after a restart): no transition
                if before is not None:
                    if not legal_steps(before[0], state):
                        self.report.add(
                            "I10",
                            f"{tid}: {before[0]} -> {state} is not a legal transition",
                            [before[3], e.index],
                        )
                    if before[1] == pid and epoch < before[2]:
                        self.report.add(
                            "I10",
                            f"{tid}: producer epoch went down from {before[2]} to {epoch}",
                            [before[3], e.index],
                        )
                last[tid] = (state, pid, epoch, e.index)
                if state in ("PrepareCommit", "PrepareAbort"):
                    prepared[tid] = (state, pid, epoch, e.index)
                elif state not in ("CompleteCommit", "CompleteAbort"):
                    prepared.pop(tid, None)
            elif e.f == "marker":
                tid = str(v["tid"])
                prep = prepared.get(tid)
                if prep is None or (prep[1], prep[2]) != (int(v["pid"]), int(v["epoch"])):
                    continue
                if last.get(tid, ("",))[0] not in ("PrepareCommit", "PrepareAbort"):
                    continue
                decided_commit = prep[0] == "PrepareCommit"
                applied = any(err == "NONE" for _t, _p, err in v["partitions"])
                if bool(v["commit"]) != decided_commit and applied:
                    self.report.add(
                        "I11",
                        f"{tid}: a {'COMMIT' if v['commit'] else 'ABORT'} marker was applied"
                        f" while the coordinator's decision was {prep[0]}",
                        [prep[3], e.index],
                    )
            elif e.f == "broker-crash":
                pass

    def _check_durability(self) -> None:
        final = self.finals.get("output-log")
        if final is None:
            return
        batches: dict[int, dict[int, tuple[int, int]]] = {}
        for partition, rows in final.value["batches"].items():
            batches[int(partition)] = {
                int(base): (int(pid), int(epoch)) for base, _last, pid, epoch, _t, _c in rows
            }
        for e in self.broker_events:
            if e.f != "produced":
                continue
            v = e.value
            if self.output_topic is not None and v.get("topic") != self.output_topic:
                continue  # the consumer-group output (chaos.group_checker)
            got = batches.get(int(v["partition"]), {}).get(int(v["offset"]))
            if got is None or got[0] != int(v["pid"]):
                self.report.add(
                    "I14",
                    f"an acknowledged produce of producer {v['pid']} at"
                    f" {v['topic']}-{v['partition']}@{v['offset']} is not in the log (lost write)",
                    [e.index, final.index],
                )

    def _check_recovery_tool(self) -> None:
        for message, indices in recovery_tool_violations(self.entries):
            self.report.add("I16", message, indices)

    def _check_hanging(self) -> None:
        txns = self.finals.get("txns")
        if txns is None:
            self.report.add("I13", "no final state was read (the broker was not available)")
            return
        if not txns.value.get("quiescent"):
            why = f": it still waited for {w}" if (w := txns.value.get("waiting")) else ""
            self.report.add("I13", f"the drain did not reach quiescence in time{why}", [txns.index])
        for tid, t in sorted(txns.value.get("txns", {}).items()):
            if t["state"] not in IDLE or t.get("pending") or t.get("markers"):
                self.report.add(
                    "I13",
                    f"{tid} is left {t['state']} (pending {t.get('pending')}, markers"
                    f" {t.get('markers')}) after the drain",
                    [txns.index],
                )
        output = self.finals.get("output")
        if output is not None:
            for partition, (lso, hw) in sorted(output.value.get("lso", {}).items()):
                if lso != hw:
                    self.report.add(
                        "I13",
                        f"output partition {partition}: LSO {lso} is pinned below the high"
                        f" watermark {hw}",
                        [output.index],
                    )
        share = self.finals.get("share")
        inputs = self.finals.get("input")
        if share is None:
            return
        if share.value.get("open_txns"):
            self.report.add(
                "I13",
                f"share acknowledgements still pending for producers {share.value['open_txns']}",
                [share.index],
            )
        for partition, p in sorted(share.value.get("partitions", {}).items()):
            stuck = [s for s in p.get("states", []) if s[1] not in TERMINAL_RECORD_STATES]
            if stuck:
                self.report.add(
                    "I13",
                    f"input partition {partition}: {len(stuck)} record(s) not consumed after the"
                    f" drain, e.g. offset {stuck[0][0]} {stuck[0][1]} (dc {stuck[0][2]})",
                    [share.index],
                )
            if inputs is not None:
                records = inputs.value["partitions"].get(partition, [])
                end = int(p.get("end", 0))
                beyond = [o for o, _v in records if o >= end]
                if beyond and "error" not in p:
                    self.report.add(
                        "I13",
                        f"input partition {partition}: {len(beyond)} record(s) never fetched",
                        [share.index],
                    )


def check(entries: Sequence[Entry], seed: int | None = None) -> list[Violation]:
    """All violations found in ``entries`` (an empty list: the history is valid)."""
    return Checker(entries, seed).run()
