"""I16, recovery-tool soundness: the operator's tool runs and their audit lines against the
clients' two-phase-commit decisions (``chaos.checker`` reports what this finds)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from chaos.history import Entry, pairs

# The operation of the operator's recovery-tool runs and the event of their audit lines.
RECOVERY_TOOL = "recovery-tool"
AUDIT = "audit"
_COMMIT_DECIDED = frozenset({"PrepareCommit", "CompleteCommit"})


def _txn_key(value: dict[str, Any]) -> tuple[str, int, int] | None:
    try:
        return str(value["tid"]), int(value["pid"]), int(value["epoch"])
    except (KeyError, TypeError, ValueError):
        return None


def recovery_tool_violations(entries: Sequence[Entry]) -> list[tuple[str, list[int]]]:
    """I16 over the operator's tool runs, their audit lines and the clients' 2PC decisions."""
    decided: dict[tuple[str, int, int], list[tuple[bool, int]]] = defaultdict(list)
    completed: dict[tuple[str, int, int], list[tuple[str, int]]] = defaultdict(list)
    supplied: dict[str, list[tuple[dict[str, Any], int]]] = defaultdict(list)  # process -> evidence
    for invoke, done in pairs(entries):
        if invoke.f == "complete" and isinstance(invoke.value, dict):
            key = _txn_key(invoke.value)
            if key is not None and "commit" in invoke.value:
                decided[key].append((bool(invoke.value["commit"]), invoke.index))
                if done is not None and done.type == "ok":
                    outcome = str((done.value or {}).get("outcome"))
                    completed[key].append((outcome, done.index))
        elif invoke.f == RECOVERY_TOOL and isinstance(invoke.value, dict):
            evidence = invoke.value.get("prepared_state")
            if isinstance(evidence, dict):
                supplied[invoke.process].append((evidence, invoke.index))
            intent = invoke.value.get("intent")  # the client's decision file, as read
            key = _txn_key(intent) if isinstance(intent, dict) else None
            if key is not None and isinstance(intent, dict) and "commit" in intent:
                decided[key].append((bool(intent["commit"]), invoke.index))
    out: list[tuple[str, list[int]]] = []
    for e in entries:
        if e.type != "event" or e.f != AUDIT or not isinstance(e.value, dict):
            continue
        v = e.value
        event, action = v.get("event"), v.get("action")
        acting = event == "begin" or (event == "end" and v.get("outcome") == "applied")
        key = _txn_key(v)
        if not acting or key is None:
            continue
        tid, pid, epoch = key
        what = f"{tid} pid={pid} epoch={epoch}"
        before = str(v.get("state_before"))
        if action == "commit" and event == "begin":  # written before it acts
            kind = v.get("evidence")
            if kind == "prepare-commit" and before == "PrepareCommit":
                pass
            elif kind == "prepared-txn-state":
                named = [
                    index
                    for state, index in supplied.get(e.process, [])
                    if (state.get("transactional_id"), state.get("producer_id"), state.get("epoch"))
                    == key
                ]
                commits = [index for commit, index in decided.get(key, []) if commit]
                if not named:
                    out.append(
                        (
                            f"the tool committed {what} on a PreparedTxnState nobody supplied"
                            " for it",
                            [e.index],
                        )
                    )
                elif not commits:
                    out.append(
                        (
                            f"the tool committed {what} on a PreparedTxnState although its client"
                            " never decided commit",
                            [*named[:1], e.index],
                        )
                    )
            else:
                out.append(
                    (
                        f"the tool committed {what} without evidence (evidence {kind},"
                        f" coordinator state {before})",
                        [e.index],
                    )
                )
            for commit, index in decided.get(key, []):
                if not commit:
                    out.append(
                        (
                            f"the tool committed {what}, which its client decided to abort",
                            [index, e.index],
                        )
                    )
            for outcome, index in completed.get(key, []):
                if outcome == "abort":
                    out.append(
                        (
                            f"the tool committed {what}, which its client completed as aborted",
                            [index, e.index],
                        )
                    )
        elif action in ("abort", "force-terminate"):
            if event == "begin" and before in _COMMIT_DECIDED:
                out.append(
                    (
                        f"the tool's {action} of {what} began in {before}: a commit decision"
                        " was durable",
                        [e.index],
                    )
                )
            if event == "end":
                for outcome, index in completed.get(key, []):
                    if outcome == "commit":
                        out.append(
                            (
                                f"the tool applied {action} to {what}, which its client"
                                " completed as committed",
                                [index, e.index],
                            )
                        )
    return out
