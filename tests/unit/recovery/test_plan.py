"""The recovery tool's safety rules, as pure functions (no broker)."""

from __future__ import annotations

from typing import Any

import pytest

from producer.twophase.execute import Outcome, StepResult, results_exit_code
from producer.twophase.model import TxnSnapshot
from producer.twophase.plan import (
    Action,
    Evidence,
    EvidenceKind,
    Op,
    Step,
    plan_exit_code,
    plan_step,
)
from producer.twophase.scan import ScanPair
from txn.exit_codes import ExitCode
from txn.ids import TopicPartition
from txn.limits import INT32_MAX

EVIDENCE = Evidence(EvidenceKind.PREPARED_TXN_STATE, "{}")


def snap(state: str, pid: int = 7, epoch: int = 3, start: int = 1000, **kw: Any) -> TxnSnapshot:
    return TxnSnapshot(
        "tid",
        state,
        pid,
        epoch,
        kw.get("timeout_ms", INT32_MAX),
        start,
        (TopicPartition("out", 0), TopicPartition("__share_group_state", 4)),
        5000,
    )


def same(s: TxnSnapshot) -> ScanPair:
    return ScanPair(s, s)


def plan(op: Op, s: TxnSnapshot | ScanPair, **kw: Any) -> Step:
    pair = s if isinstance(s, ScanPair) else same(s)
    kw.setdefault("producer_id", 7)
    kw.setdefault("producer_epoch", 3)
    return plan_step(op, pair, **kw)


@pytest.mark.parametrize(
    ("state", "evidence", "action"),
    [
        ("Ongoing", None, Action.REFUSE),  # no durable evidence
        ("Ongoing", EVIDENCE, Action.COMMIT),
        ("PrepareCommit", None, Action.WAIT),  # PREPARE_COMMIT is the evidence
        ("CompleteCommit", None, Action.NOOP),
        ("PrepareAbort", EVIDENCE, Action.REFUSE),
        ("CompleteAbort", EVIDENCE, Action.REFUSE),
        ("Empty", EVIDENCE, Action.REFUSE),
    ],
)
def test_commit_needs_durable_evidence(
    state: str, evidence: Evidence | None, action: Action
) -> None:
    assert plan(Op.COMMIT, snap(state), evidence=evidence).action is action


@pytest.mark.parametrize(
    ("state", "action"),
    [
        ("Ongoing", Action.ABORT),
        ("PrepareCommit", Action.REFUSE),  # a durable commit decision
        ("CompleteCommit", Action.REFUSE),
        ("PrepareAbort", Action.WAIT),
        ("CompleteAbort", Action.NOOP),
        ("Empty", Action.NOOP),
    ],
)
def test_abort_never_contradicts_a_commit_decision(state: str, action: Action) -> None:
    assert plan(Op.ABORT, snap(state)).action is action


@pytest.mark.parametrize(
    ("state", "action"),
    [
        ("Ongoing", Action.FORCE_TERMINATE),
        ("PrepareCommit", Action.REFUSE),
        ("PrepareEpochFence", Action.WAIT),
        ("CompleteCommit", Action.NOOP),
        ("Empty", Action.NOOP),
    ],
)
def test_force_terminate(state: str, action: Action) -> None:
    s = plan_step(Op.FORCE_TERMINATE, same(snap(state)))
    assert s.action is action


def test_acting_steps_carry_the_compare_and_set_precondition_and_effects() -> None:
    s = plan(Op.COMMIT, snap("Ongoing"), evidence=EVIDENCE)
    assert s.expected is not None and s.expected.fingerprint == ("Ongoing", 7, 3, 1000)
    assert any("compare-and-set" in p for p in s.preconditions)
    assert any("out-0" in e for e in s.effects)


def test_a_transaction_that_changed_between_scans_is_live() -> None:
    pair = ScanPair(snap("Ongoing", start=1000), snap("Ongoing", start=2000))
    assert plan(Op.ABORT, pair).action is Action.RACED
    assert not pair.in_doubt
    assert same(snap("Ongoing")).in_doubt
    assert not same(snap("CompleteAbort")).in_doubt


def test_a_stale_producer_epoch_is_raced_or_per_decision_rule() -> None:
    newer = snap("Ongoing", epoch=5)
    assert plan(Op.COMMIT, newer, evidence=EVIDENCE).action is Action.RACED
    assert plan(Op.ABORT, newer).action is Action.RACED
    # the Spark decision rule: an abort of a superseded transaction is done (fenced)
    assert plan(Op.ABORT, newer, decision_rule=True).action is Action.NOOP
    # ... but a commit of one cannot be verified: a heuristic hazard, refused
    assert plan(Op.COMMIT, newer, evidence=EVIDENCE, decision_rule=True).action is Action.REFUSE


def test_unknown_ids() -> None:
    unknown = TxnSnapshot.unknown("tid", 1)
    assert plan(Op.ABORT, unknown).action is Action.REFUSE
    assert plan(Op.ABORT, unknown, decision_rule=True).action is Action.NOOP
    assert plan(Op.COMMIT, unknown, decision_rule=True).action is Action.REFUSE


def test_the_audit_history_makes_reruns_idempotent() -> None:
    moved_on = snap("Empty", epoch=4)  # the resumed producer bumped the epoch after commit
    done = {"event": "end", "outcome": "applied", "step": {"action": "commit"}, "ts": "t"}
    assert plan(Op.COMMIT, moved_on, evidence=EVIDENCE, history=done).action is Action.NOOP
    assert plan(Op.ABORT, moved_on, history=done).action is Action.REFUSE
    aborted = {**done, "step": {"action": "abort"}}
    assert plan(Op.ABORT, moved_on, history=aborted).action is Action.NOOP
    # still open: the history does not matter, the coordinator does
    assert plan(Op.COMMIT, snap("Ongoing"), evidence=EVIDENCE, history=done).action is (
        Action.COMMIT
    )


@pytest.mark.parametrize(
    ("state", "epoch"),
    [("CompleteAbort", 4), ("PrepareAbort", 4), ("PrepareEpochFence", 4), ("CompleteAbort", 3)],
)
def test_a_begun_commit_does_not_hide_an_abort_by_the_coordinator(state: str, epoch: int) -> None:
    """The decision rule's history of a commit only written ahead (``committing/N``): the
    coordinator aborting the transaction (its timeout without KIP-939) is a hazard, not done."""
    begun = {"event": "end", "outcome": "applied", "step": {"action": "commit"}, "ts": "t"}
    aborted = snap(state, epoch=epoch)
    step = plan(Op.COMMIT, aborted, evidence=EVIDENCE, history=begun, decision_rule=True)
    assert step.action is Action.REFUSE
    assert "aborted by the coordinator" in step.reason
    # a later, unrelated state of the id (the commit went through, the epoch moved on)
    moved_on = snap("Empty", epoch=4)
    assert plan(
        Op.COMMIT, moved_on, evidence=EVIDENCE, history=begun, decision_rule=True
    ).action is (Action.NOOP)


def test_exit_codes() -> None:
    def step(action: Action) -> Step:
        return Step(Op.ABORT, action, "t", 1, 1, "r")

    assert plan_exit_code([]) is ExitCode.NOTHING_TO_DO
    assert plan_exit_code([step(Action.NOOP)]) is ExitCode.NOTHING_TO_DO
    assert plan_exit_code([step(Action.NOOP), step(Action.ABORT)]) is ExitCode.FOUND
    assert plan_exit_code([step(Action.ABORT), step(Action.REFUSE)]) is ExitCode.REFUSED
    assert plan_exit_code([step(Action.REFUSE), step(Action.RACED)]) is ExitCode.RACED

    def result(outcome: Outcome) -> StepResult:
        return StepResult(step(Action.ABORT), outcome, "")

    assert results_exit_code([result(Outcome.NOOP)]) is ExitCode.NOTHING_TO_DO
    assert results_exit_code([result(Outcome.APPLIED), result(Outcome.NOOP)]) is ExitCode.ACTED
    assert results_exit_code([result(Outcome.APPLIED), result(Outcome.RACED)]) is ExitCode.RACED
    assert results_exit_code([result(Outcome.REFUSED)]) is ExitCode.REFUSED
