"""The checker on hand-built histories: a valid one passes, each invariant fires on its anomaly."""

from __future__ import annotations

import pytest

from chaos.checker import AUDIT, RECOVERY_TOOL, legal_steps, parse_output
from chaos.history import BROKER, READER, History
from tests.chaos.histories import Story, invariants, valid, w0

pytestmark = pytest.mark.chaos


def test_a_valid_history_has_no_violation() -> None:
    assert valid().finish() == []


def test_history_round_trips_through_jsonl() -> None:
    story = valid()
    story.finish()
    text = story.h.to_jsonl()
    again = History.parse(text)
    assert [e.to_json() for e in again] == [e.to_json() for e in story.h.entries]
    assert (
        "".join(
            __import__("json").dumps(e.to_json(), sort_keys=True, separators=(",", ":")) + "\n"
            for e in again
        )
        == text
    )


def test_i3_aborted_read() -> None:
    story = Story()
    story.acquire((0, 1))
    story.txn("w0.1.1", [(0, "i0"), (1, "i1")], outcome="abort")  # but visible
    assert "I3" in invariants(story.finish())


def test_i3_concurrent_reader_saw_what_was_later_aborted() -> None:
    story = Story()
    story.acquire((0, 1))
    # the LSO let a read_committed consumer read the open transaction's outputs ...
    story.event(READER, "read", {"partition": 0, "records": [[0, "i0@0:0|w0.1.1"]]})
    story.txn("w0.1.1", [(0, "i0"), (1, "i1")], outcome="abort", visible=False)  # ... then abort
    found = [v for v in story.finish() if v.invariant == "I3"]
    assert len(found) == 1
    assert "read_committed consumer read 'i0@0:0|w0.1.1'" in found[0].message


def test_i3_concurrent_reader_of_committed_outputs_is_fine() -> None:
    story = valid()
    story.event(READER, "read", {"partition": 0, "records": [[0, "i0@0:0|w0.1.1"]]})
    assert story.finish() == []


def test_i15_failed_transaction_visible() -> None:
    story = Story()
    story.acquire((0, 1))
    story.txn("w0.1.1", [(0, "i0"), (1, "i1")], result="fail")
    assert "I15" in invariants(story.finish())


def test_i15_committed_transaction_invisible() -> None:
    story = Story()
    story.acquire((0, 1))
    story.txn("w0.1.1", [(0, "i0"), (1, "i1")], visible=False)
    assert "I15" in invariants(story.finish())


def test_i15_txn_ack_answered_none_without_staging() -> None:
    story = valid()
    story.pending([[5, 6, 1]], staged=[[5, 5]])
    messages = [v.message for v in story.finish() if v.invariant == "I15"]
    assert messages and "did not become TX_PENDING" in messages[0]


def test_i2_torn_transaction() -> None:
    story = valid()
    story.committed[0].pop()  # one of the two confirmed outputs is missing
    assert "I2" in invariants(story.finish())


def test_i4_two_outputs_for_one_input() -> None:
    story = valid()
    story.acquire((0, 1), dc=2, member="m2")
    # a second member processed the same inputs again and committed
    story.txn("w0.1.2", [(0, "i0"), (1, "i1")], offset=10)
    assert "I4" in invariants(story.finish())


def test_i5_lost_input() -> None:
    story = Story()
    story.acquire((0, 1))
    story.txn("w0.1.1", [(0, "i0")])  # i1 acknowledged (SPSO 2) but never produced
    assert "I5" in invariants(story.finish())


def test_i5_allows_inputs_archived_at_the_delivery_limit() -> None:
    story = Story(limit=3)
    story.acquire((0, 1))
    story.acquire((1, 1), dc=3)  # i1 reached the limit: archiving it is allowed
    story.txn("w0.1.1", [(0, "i0")])
    assert "I5" not in invariants(story.finish())


def test_i1_committed_ack_delivered_again() -> None:
    story = valid()
    story.acquire((0, 1), dc=2, member="m2")  # after the COMMIT marker applied
    assert "I1" in invariants(story.finish())


def test_i6_aborted_ack_never_redelivered() -> None:
    story = Story()
    story.acquire((0, 1))
    story.txn("w0.1.1", [(0, "i0"), (1, "i1")], outcome="abort", visible=False)
    # no later acquisition of 0..1, and nothing visible: the abort did not revert them
    assert "I6" in invariants(story.finish())


def test_i7_acquired_while_pending() -> None:
    story = Story()
    story.acquire((0, 1))
    story.pending([[0, 1, 1]])
    story.acquire((1, 1), dc=2, member="m2")
    assert "I7" in invariants(story.finish())


def test_i7_restart_without_the_pending_ack_releases_it() -> None:
    story = Story()
    story.acquire((0, 1))
    story.pending([[0, 1, 1]])
    story.event(BROKER, "broker-crash", {"incarnation": 1, "reason": "x"})
    story.event(BROKER, "broker-start", {"incarnation": 2, "open": []})  # replay resolved it
    story.acquire((0, 1), dc=2, member="m2")
    assert "I7" not in invariants(story.finish())


def test_i8_delivery_count_above_the_limit_or_going_down() -> None:
    story = valid()
    story.acquire((5, 5), dc=4)  # limit 3
    story.acquire((6, 6), dc=2)
    story.acquire((6, 6), dc=1)  # same incarnation: went down
    found = [v for v in story.finish() if v.invariant == "I8"]
    assert len(found) == 2


def test_i8_delivery_count_jumping_by_more_than_one() -> None:
    story = Story(limit=10)
    story.acquire((0, 1))
    story.txn("w0.1.1", [(0, "i0"), (1, "i1")])
    story.acquire((6, 7), dc=1)
    story.acquire((6, 7), dc=1)  # a release on session close decrements it: same count again
    story.acquire((6, 7), dc=2)
    story.acquire((7, 7), dc=3)  # one more delivery each time: fine
    story.acquire((7, 7), dc=5)  # 3 -> 5: an abort or expiry counted a delivery twice
    found = [v for v in story.finish() if v.invariant == "I8"]
    assert [v.message for v in found] == [
        "record (0, 7)'s delivery count jumped from 3 to 5 between two consecutive deliveries"
    ]


def test_i8_allows_a_lower_count_after_a_restart() -> None:
    story = valid()
    story.acquire((6, 6), dc=2)
    story.event(BROKER, "broker-start", {"incarnation": 2, "open": []})
    story.acquire((6, 6), dc=1)  # acquisitions are not persisted (as in Kafka)
    assert "I8" not in invariants(story.finish())


def test_i9_stale_epoch_accepted() -> None:
    story = valid()
    story.event(BROKER, "epoch", {"tid": "w0", "pid": 1, "epoch": 5, "keep": False})
    story.produced(0, w0(epoch=4), seq=9)
    assert "I9" in invariants(story.finish())


def test_i9_ignores_answers_from_the_duplicate_window() -> None:
    story = valid()
    story.event(BROKER, "epoch", {"tid": "w0", "pid": 1, "epoch": 5, "keep": False})
    story.produced(0, dup=True)
    assert "I9" not in invariants(story.finish())


def test_i10_illegal_transition() -> None:
    story = valid()
    story.event(BROKER, "txn-state", {"tid": "w0", "state": "PrepareAbort", "pid": 1, "epoch": 0})
    story.event(BROKER, "txn-state", {"tid": "w0", "state": "CompleteCommit", "pid": 1, "epoch": 0})
    assert "I10" in invariants(story.finish())


def test_i10_epoch_going_down() -> None:
    story = valid()
    story.event(BROKER, "txn-state", {"tid": "w0", "state": "Empty", "pid": 1, "epoch": 3})
    story.event(BROKER, "txn-state", {"tid": "w0", "state": "Empty", "pid": 1, "epoch": 2})
    assert "I10" in invariants(story.finish())


def test_legal_steps_table() -> None:
    assert legal_steps("Ongoing", "PrepareCommit")
    assert legal_steps("Ongoing", "CompleteCommit")  # two steps apart
    assert not legal_steps("PrepareCommit", "CompleteAbort")
    assert not legal_steps("CompleteAbort", "CompleteCommit")
    assert legal_steps("Empty", "Empty")


def test_i11_marker_contradicts_the_decision() -> None:
    story = valid()
    story.event(BROKER, "txn-state", {"tid": "w0", "state": "Ongoing", "pid": 1, "epoch": 0})
    story.event(BROKER, "txn-state", {"tid": "w0", "state": "PrepareCommit", "pid": 1, "epoch": 0})
    story.event(
        BROKER,
        "marker",
        {
            "tid": "w0",
            "pid": 1,
            "epoch": 0,
            "commit": False,
            "how": "late",
            "partitions": [["out", 0, "NONE"]],
        },
    )
    assert "I11" in invariants(story.finish())


def test_i13_hanging_transaction_after_the_drain() -> None:
    story = valid()
    story.txns["w1"] = {"state": "Ongoing", "pending": None, "pid": 2, "epoch": 0, "markers": []}
    story.lso[0] = [0, 4]
    story.open_txns = [2]
    story.quiescent = False
    story.share["0"] = {"start": 0, "end": 2, "states": [[0, "TX_PENDING", 1]]}
    messages = [v.message for v in story.finish() if v.invariant == "I13"]
    assert len(messages) >= 4


def test_i13_names_what_the_drain_waited_for() -> None:
    story = valid()
    story.quiescent = False
    story.waiting = "the consumer group to consume in-3 (committed -1, log end 0)"
    messages = [v.message for v in story.finish() if v.invariant == "I13"]
    assert messages == [
        "the drain did not reach quiescence in time: it still waited for the consumer group"
        " to consume in-3 (committed -1, log end 0)"
    ]


def test_i13_inputs_never_fetched() -> None:
    story = valid()
    story.inputs[0].append([2, "i2"])
    assert "I13" in invariants(story.finish())


def test_i14_lost_acknowledged_write() -> None:
    story = valid()
    story.batches[0].clear()  # the acknowledged produce is not in the log any more
    assert "I14" in invariants(story.finish())


def test_i14_garbage_and_duplicate_values() -> None:
    story = valid()
    story.committed[0].append([7, "nonsense"])
    story.committed[0].append([8, story.committed[0][0][1]])
    messages = [v.message for v in story.finish() if v.invariant == "I14"]
    assert any("malformed" in m for m in messages)
    assert any("twice" in m for m in messages)


def test_i14_duplicated_input() -> None:
    story = valid()
    story.inputs[0].append([2, "i0"])
    assert "I14" in invariants(story.finish())


def test_e0_broker_exception() -> None:
    story = valid()
    story.event(BROKER, "exception", {"where": "Produce", "error": "KeyError: 3"})
    assert "E0" in invariants(story.finish())


def test_violations_name_their_entries_and_seed() -> None:
    story = Story()
    story.acquire((0, 1))
    story.txn("w0.1.1", [(0, "i0"), (1, "i1")], outcome="abort")
    violation = next(v for v in story.finish() if v.invariant == "I3")
    assert violation.seed == 0 and violation.entries
    text = violation.describe(story.h.entries)
    assert "w0.1.1" in text and "invoke txn" in text


def test_parse_output() -> None:
    assert parse_output("i17@2:5|w1.3.7") == ("i17", 2, 5, "w1.3.7")
    assert parse_output("garbage") is None


def _tool_run(
    story: Story,
    *,
    command: str,
    state_before: str,
    intent: dict[str, object] | None = None,
    prepared_state: dict[str, object] | None = None,
    evidence: str | None = None,
    tid: str = "w0-2pc",
) -> None:
    """One operator run of the recovery tool on (tid, pid 7, epoch 2) that applied ``command``."""
    value: dict[str, object] = {"job": 1, "tid": tid, "command": command, "intent": intent}
    if prepared_state is not None:
        value["prepared_state"] = prepared_state
    story.op("op1", RECOVERY_TOOL, value, "ok", {"exit": 2})
    for event in ("begin", "end"):
        story.event(
            "op1",
            AUDIT,
            {
                "event": event,
                "outcome": "applied" if event == "end" else None,
                "action": command,
                "tid": tid,
                "pid": 7,
                "epoch": 2,
                "evidence": evidence,
                "state_before": state_before,
            },
        )


def _client_completes(story: Story, *, commit: bool, outcome: str) -> None:
    ident = {"tag": "w0.1.9", "tid": "w0-2pc", "pid": 7, "epoch": 2, "commit": commit}
    story.op("w0.1", "complete", ident, "ok", {"outcome": outcome})


def test_i16_sound_tool_runs_are_fine() -> None:
    story = valid()
    intent = {"tag": "w0.1.9", "tid": "w0-2pc", "pid": 7, "epoch": 2, "commit": True}
    state = {"transactional_id": "w0-2pc", "producer_id": 7, "epoch": 2}
    _tool_run(
        story,
        command="commit",
        state_before="Ongoing",
        intent=intent,
        prepared_state=state,
        evidence="prepared-txn-state",
    )
    _tool_run(story, command="force-terminate", state_before="Ongoing", tid="w1-2pc")
    assert story.finish() == []


def test_i16_commit_without_evidence() -> None:
    story = valid()
    _tool_run(story, command="commit", state_before="Ongoing", evidence=None)
    assert invariants(story.finish()) == {"I16"}


def test_i16_commit_on_evidence_nobody_supplied_or_against_the_decision() -> None:
    story = valid()
    intent = {"tag": "w0.1.9", "tid": "w0-2pc", "pid": 7, "epoch": 2, "commit": False}
    _tool_run(
        story,
        command="commit",
        state_before="Ongoing",
        intent=intent,
        evidence="prepared-txn-state",
    )
    violations = story.finish()
    assert invariants(violations) == {"I16"}
    messages = " / ".join(v.message for v in violations)
    assert "nobody supplied" in messages and "decided to abort" in messages


def test_i16_abort_after_the_commit_decision() -> None:
    story = valid()
    _client_completes(story, commit=True, outcome="commit")
    _tool_run(story, command="abort", state_before="PrepareCommit")
    violations = story.finish()
    assert invariants(violations) == {"I16"}
    assert len(violations) == 2, "begun in PrepareCommit; applied to a committed transaction"


def test_i16_force_terminate_after_the_client_committed() -> None:
    story = valid()
    _client_completes(story, commit=True, outcome="commit")
    _tool_run(story, command="force-terminate", state_before="Ongoing")
    assert invariants(story.finish()) == {"I16"}
