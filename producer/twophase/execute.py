"""Executing plans: compare-and-set, act through the client library, audit every step.

For each acting step the executor describes the transaction again *immediately* before
acting and compares (state, producer id, epoch, start time) with the plan's
precondition; a mismatch is RACED and nothing is done.  Commit and abort go through
``producer.twophase.resume.resume_and_end`` (``TransactionalProducer.resume``: InitProducerId
with keep_prepared_txn, or on Apache Kafka the stored ids checked with DescribeTransactions;
either refuses a different (producer id, epoch); then the commit or abort), the decider the
Spark sink's commit phase uses too; a commit that the transaction's timeout beat (ABORTED)
is REFUSED, an ended or replaced transaction RACED, an unconfirmed EndTxn HEURISTIC;
force-terminate is InitProducerId without keep_prepared_txn,
which fences the producer and aborts its transaction.  ``before_action`` is the point
where tests inject a concurrent change between plan and action.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from producer.produce.transactional_producer import TransactionalProducer
from producer.twophase.audit import AuditLog
from producer.twophase.model import TxnSnapshot
from producer.twophase.outcome import ended_as, marker_starts
from producer.twophase.plan import Action, Step
from producer.twophase.resume import Ended, resume_and_end
from producer.twophase.scan import Scanner
from txn.batch import ControlType
from txn.errors import KafkaProtocolError, SharetxnError
from txn.exit_codes import ExitCode


class Outcome(StrEnum):
    APPLIED = "applied"
    NOOP = "noop"
    REFUSED = "refused"
    RACED = "raced"
    PENDING = "pending"  # waited for the coordinator, which has not finished yet
    FAILED = "failed"
    HEURISTIC = "heuristic"  # EndTxn was sent but its outcome could not be confirmed


_EXIT_BY_OUTCOME = (
    (Outcome.RACED, ExitCode.RACED),
    (Outcome.REFUSED, ExitCode.REFUSED),
    (Outcome.HEURISTIC, ExitCode.UNAVAILABLE),
    (Outcome.FAILED, ExitCode.UNAVAILABLE),
    (Outcome.APPLIED, ExitCode.ACTED),
    (Outcome.PENDING, ExitCode.FOUND),
)


class OutcomeUnconfirmedError(SharetxnError):
    """The commit or abort call failed after EndTxn may have reached the coordinator."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause


@dataclass(frozen=True, slots=True)
class StepResult:
    """What executing one step did."""

    step: Step
    outcome: Outcome
    detail: str
    before: TxnSnapshot | None = None
    after: TxnSnapshot | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.step.to_json(),
            "outcome": self.outcome.value,
            "detail": self.detail,
            "before": self.before.to_json() if self.before else None,
            "after": self.after.to_json() if self.after else None,
        }


def results_exit_code(results: Iterable[StepResult]) -> ExitCode:
    """The exit code of an ``--execute`` run: the most urgent outcome decides."""
    outcomes = {r.outcome for r in results}
    for outcome, code in _EXIT_BY_OUTCOME:
        if outcome in outcomes:
            return code
    return ExitCode.NOTHING_TO_DO


class Executor:
    """Runs planned steps against the cluster, with compare-and-set and the audit log."""

    def __init__(
        self,
        scanner: Scanner,
        bootstrap_servers: str,
        audit: AuditLog,
        *,
        wait_timeout_s: float = 30.0,
        poll_interval_s: float = 0.1,
        client_config: Mapping[str, Any] | None = None,
    ) -> None:
        self.scanner = scanner
        self.bootstrap_servers = bootstrap_servers
        self.audit = audit
        self.wait_timeout_s = wait_timeout_s
        self.poll_interval_s = poll_interval_s
        self.client_config: dict[str, Any] = {
            "bootstrap.servers": bootstrap_servers,
            "client.id": "sharetxn-recovery",
            "max.block.ms": max(1000, int(wait_timeout_s * 1000)),
            **(client_config or {}),
        }

    def before_action(self, step: Step) -> None:
        """Called just before the compare-and-set of each acting step (a test hook)."""

    def run(self, steps: Iterable[Step]) -> list[StepResult]:
        return [self.execute(step) for step in steps]

    def execute(self, step: Step) -> StepResult:
        """Execute one step; planned refusals and races are audited, not acted on."""
        if step.action is Action.NOOP:
            return StepResult(step, Outcome.NOOP, step.reason, step.expected, step.expected)
        if step.action is Action.REFUSE:
            self.audit.write("refused", {"step": step.to_json()})
            return StepResult(step, Outcome.REFUSED, step.reason)
        if step.action is Action.RACED:
            self.audit.write("raced", {"step": step.to_json(), "stage": "plan"})
            return StepResult(step, Outcome.RACED, step.reason)
        if step.action is Action.MARK_RESOLVED:
            msg = "mark-resolved steps are executed by the Spark recovery, not the executor"
            raise ValueError(msg)
        self.before_action(step)
        try:
            before = self.scanner.snapshot(step.transactional_id)
        except KafkaProtocolError as exc:
            return self._failed(step, None, exc)
        assert step.expected is not None
        # Waiting acts on nothing: a coordinator that finished meanwhile is no race.
        if step.action is not Action.WAIT and before.fingerprint != step.expected.fingerprint:
            detail = (
                f"stale plan: expected {step.expected.describe()} "
                f"(start {step.expected.start_time_ms}), found {before.describe()} "
                f"(start {before.start_time_ms})"
            )
            self.audit.write(
                "raced",
                {
                    "step": step.to_json(),
                    "stage": "compare-and-set",
                    "before": before.to_json(),
                    "reason": detail,
                },
            )
            return StepResult(step, Outcome.RACED, detail, before, before)
        self.audit.write(
            "begin",
            {"step": step.to_json(), "before": before.to_json(), "reason": step.reason},
        )
        try:
            outcome, detail = self._act(step, before)
        except OutcomeUnconfirmedError as exc:
            return self._heuristic(step, before, exc)
        except SharetxnError as exc:  # a protocol error, or the client refusing a call
            return self._failed(step, before, exc)
        try:
            after = self._settled(step.transactional_id)
        except KafkaProtocolError as exc:
            return self._failed(step, before, exc, acted=outcome is Outcome.APPLIED)
        if step.action is Action.WAIT:
            done = not after.state.startswith("Prepare")
            outcome = Outcome.NOOP if done else Outcome.PENDING
            detail = (
                f"completed by the coordinator: {after.describe()}"
                if done
                else f"still {after.state} after {self.wait_timeout_s}s"
            )
        self.audit.write(
            "end",
            {
                "step": step.to_json(),
                "outcome": outcome.value,
                "detail": detail,
                "before": before.to_json(),
                "after": after.to_json(),
                "reason": step.reason,
            },
        )
        return StepResult(step, outcome, detail, before, after)

    # -- acting -------------------------------------------------------------------------------

    def _act(self, step: Step, before: TxnSnapshot) -> tuple[Outcome, str]:
        tid = step.transactional_id
        timeout_s = self.wait_timeout_s
        if step.action in (Action.COMMIT, Action.ABORT):
            assert step.producer_id is not None and step.producer_epoch is not None
            commit = step.action is Action.COMMIT
            result = resume_and_end(
                tid,
                step.producer_id,
                step.producer_epoch,
                self.client_config,
                commit=commit,
                timeout_s=timeout_s,
                close_timeout_s=5,
            )
            exc = result.error
            match result.ended:
                case Ended.DONE:
                    verb = "committed" if commit else "aborted"
                    pid, epoch = step.producer_id, step.producer_epoch
                    return Outcome.APPLIED, f"{verb} pid={pid} epoch={epoch}"
                case Ended.ABORTED:  # Apache Kafka without KIP-939: the timeout won the race
                    if commit:
                        return Outcome.REFUSED, f"not committed: {exc}"
                    return Outcome.NOOP, str(exc)
                case Ended.COMMITTED | Ended.GONE | Ended.REPLACED:
                    return Outcome.RACED, f"resume refused: {exc}"  # nothing was ended
                case Ended.SUPERSEDED:
                    return Outcome.RACED, f"superseded while acting: {exc}"
                case Ended.UNCONFIRMED:  # EndTxn may have been sent: unknown, not failed
                    assert exc is not None
                    raise OutcomeUnconfirmedError(exc) from exc
        if step.action is Action.FORCE_TERMINATE:
            return self._fence(before)
        return Outcome.NOOP, "waiting for the coordinator"

    def _fence(self, before: TxnSnapshot) -> tuple[Outcome, str]:
        """Fence the id (InitProducerId), then read back how the transaction ended.

        The client may commit between the compare-and-set and the fence; the coordinator then
        completes that commit and only bumps the epoch, so the outcome is read from the
        transaction's markers (``producer.twophase.outcome``) instead of assumed.
        """
        admin = self.scanner.admin
        starts = marker_starts(admin, before)
        tid = before.transactional_id
        fencer = TransactionalProducer({**self.client_config, "transactional.id": tid})
        try:
            fencer.init_transactions(timeout_s=self.wait_timeout_s)
            pid, epoch = fencer.producer_id_and_epoch
        finally:
            fencer.close(timeout_s=5)
        now = f"the id is now pid={pid} epoch={epoch}"
        try:
            ended = ended_as(admin, starts, before.producer_id, timeout_s=self.wait_timeout_s)
        except SharetxnError as exc:  # the fence acted: only its confirmation failed
            return Outcome.APPLIED, f"fenced (the outcome could not be read back: {exc}); {now}"
        if ended is ControlType.COMMIT:
            return Outcome.RACED, f"committed by its client before the fence; {now}"
        if ended is None:
            return Outcome.APPLIED, f"fenced (no marker found to confirm the abort); {now}"
        return Outcome.APPLIED, f"fenced and aborted; {now}"

    def _settled(self, transactional_id: str) -> TxnSnapshot:
        """Describe until the coordinator left Prepare* (markers delivered) or the timeout."""
        deadline = time.monotonic() + self.wait_timeout_s
        while True:
            snap = self.scanner.snapshot(transactional_id)
            if not snap.state.startswith("Prepare") or time.monotonic() >= deadline:
                return snap
            time.sleep(self.poll_interval_s)

    def _heuristic(
        self, step: Step, before: TxnSnapshot, exc: OutcomeUnconfirmedError
    ) -> StepResult:
        """Record an outcome the tool could not confirm (Narayana's HEURISTIC_HAZARD).

        The ``heuristic`` line keeps the transaction in the tool's in-doubt bookkeeping
        (``txn list`` shows it) until an operator checked the outputs and ran ``txn
        forget``; the coordinator cannot tell how (producer id, epoch) ended.
        """
        try:
            after: TxnSnapshot | None = self.scanner.snapshot(step.transactional_id)
        except KafkaProtocolError:
            after = None
        detail = (
            f"{step.action.value} sent, outcome not confirmed ({exc}); check the outputs with "
            "a read_committed consumer, then `sharetxn txn forget`"
        )
        self.audit.write(
            "heuristic",
            {
                "step": step.to_json(),
                "transactional_id": step.transactional_id,
                "outcome": Outcome.HEURISTIC.value,
                "before": before.to_json(),
                "after": after.to_json() if after else None,
                "error": str(exc),
                "reason": detail,
            },
        )
        return StepResult(step, Outcome.HEURISTIC, detail, before, after)

    def _failed(
        self, step: Step, before: TxnSnapshot | None, exc: Exception, *, acted: bool = False
    ) -> StepResult:
        """Audit a failure; ``acted``: the action itself succeeded, only the check after failed."""
        detail = f"{type(exc).__name__}: {exc}"
        if acted:
            detail = f"acted, but the state afterwards could not be read: {detail}"
        self.audit.write(
            "end" if acted else "failed",
            {
                "step": step.to_json(),
                "outcome": (Outcome.APPLIED if acted else Outcome.FAILED).value,
                "before": before.to_json() if before else None,
                "error": detail,
            },
        )
        return StepResult(step, Outcome.APPLIED if acted else Outcome.FAILED, detail, before)
