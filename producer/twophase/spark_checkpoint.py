"""The Spark checkpoint contract of the exactly-once source and sink, and its decision rule.

This module is shared by ``sharetxn recover`` and the Spark source's own recovery
(DESIGN §6), so both resolve a query's prepared transactions the same way.  It does no
network I/O and needs neither the client library nor rich.

Layout (``checkpoint`` is the query's ``checkpointLocation``; ``state_dir`` defaults to
it and holds the files this library writes)::

    checkpoint/metadata          Spark's: {"id": "<queryId>"}
    checkpoint/commits/N         Spark's commit log: its existence is the decision for N
    state_dir/intents/N.json     written atomically by the sink before foreachBatch returns
    state_dir/committing/N       written before the commit phase commits batch N's
                                 transactions (the write-ahead of those commits)
    state_dir/resolved/N         written after every transaction of N was completed

``intents/N.json`` (schema version 1)::

    {"version": 1, "batch": N, "query_id": "<queryId>",
     "transactional_id_prefix": "<prefix>",               # optional
     "run_id": "<runId>", "written_at_ms": 1700000000000,  # optional
     "transactions": [{"transactional_id": "...", "producer_id": 7, "epoch": 3,
                       "role": "r" | "w"}]}                # role optional

Decision rule: every intent N without ``resolved/N`` commits its transactions if
``commits/N`` exists and aborts them otherwise; then every open transaction whose id
starts with ``{prefix}-{queryId}-`` and that no intent names (id, producer id, epoch) is
aborted (its driver died before writing the intent).  A still-open transaction named by an
intent that is already resolved gets that intent's decision again, never an abort of a
committed batch.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from producer.twophase.checkpoint_fs import LOCAL, CheckpointFS, join
from producer.twophase.model import CheckpointFormatError

INTENT_VERSION = 1
INTENTS_DIR = "intents"
COMMITS_DIR = "commits"
RESOLVED_DIR = "resolved"
COMMITTING_DIR = "committing"
METADATA_FILE = "metadata"
ROLES = frozenset({"r", "w"})
_OPEN = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
_INTENT_NAME = re.compile(r"^(\d+)\.json$")
_BATCH_NAME = re.compile(r"^(\d+)$")


class Outcome(StrEnum):
    COMMIT = "commit"
    ABORT = "abort"


@dataclass(frozen=True, slots=True)
class IntentTransaction:
    """One prepared transaction recorded in an intent (a PreparedTxnState plus its role)."""

    transactional_id: str
    producer_id: int
    epoch: int
    role: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "transactional_id": self.transactional_id,
            "producer_id": self.producer_id,
            "epoch": self.epoch,
        }
        if self.role is not None:
            out["role"] = self.role
        return out


@dataclass(frozen=True, slots=True)
class Intent:
    """``intents/N.json``: every prepared transaction of batch N."""

    batch: int
    transactions: tuple[IntentTransaction, ...]
    query_id: str | None = None
    transactional_id_prefix: str | None = None
    run_id: str | None = None
    written_at_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": INTENT_VERSION,
            "batch": self.batch,
            "transactions": [t.to_json() for t in self.transactions],
        }
        for key in ("query_id", "transactional_id_prefix", "run_id", "written_at_ms"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True, slots=True)
class CheckpointView:
    """What a checkpoint says: intents, commit-log entries and resolved batches."""

    checkpoint: str
    state_dir: str
    query_id: str | None
    intents: dict[int, Intent] = field(default_factory=dict)
    commits: frozenset[int] = frozenset()
    resolved: frozenset[int] = frozenset()
    #: the store both locations are on (every write of a resolver goes through it)
    fs: CheckpointFS = field(default=LOCAL, compare=False, repr=False)

    def unresolved(self) -> list[Intent]:
        return [self.intents[n] for n in sorted(self.intents) if n not in self.resolved]

    def decision_for(self, batch: int) -> Outcome:
        return Outcome.COMMIT if batch in self.commits else Outcome.ABORT

    def transactional_id_prefix(self) -> str | None:
        """The user prefix, as recorded by an intent or derived from an id."""
        for intent in self.intents.values():
            if intent.transactional_id_prefix:
                return intent.transactional_id_prefix
        if self.query_id:
            marker = f"-{self.query_id}-"
            for intent in self.intents.values():
                for t in intent.transactions:
                    head, found, _ = t.transactional_id.partition(marker)
                    if found and head:
                        return head
        return None


class LiveTransaction(Protocol):
    """The coordinator's view of one id (``producer.twophase.model.TxnSnapshot`` is one)."""

    @property
    def transactional_id(self) -> str: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def state(self) -> str: ...


@dataclass(frozen=True, slots=True)
class TxnDecision:
    """Commit or abort one transaction; ``batch`` None marks an orphan."""

    transactional_id: str
    producer_id: int
    epoch: int
    outcome: Outcome
    batch: int | None
    reason: str

    @property
    def orphan(self) -> bool:
        return self.batch is None


@dataclass(frozen=True, slots=True)
class Decisions:
    """The decision rule's result: per-transaction decisions and the batches to resolve."""

    transactions: tuple[TxnDecision, ...]
    batches: tuple[tuple[int, Outcome], ...]  # unresolved intents, in batch order


def query_prefix(prefix: str, query_id: str) -> str:
    """The id prefix of one query's transactions: ``{prefix}-{queryId}-``."""
    return f"{prefix}-{query_id}-"


def transactional_id(prefix: str, query_id: str, role: str, batch: int, partition: int) -> str:
    """DESIGN §6 ids: ``{prefix}-{queryId}-{r|w}-{N mod 2}-{partition}``."""
    if role not in ROLES:
        msg = f"role must be 'r' or 'w', got {role!r}"
        raise ValueError(msg)
    return f"{query_prefix(prefix, query_id)}{role}-{batch % 2}-{partition}"


# -- reading ----------------------------------------------------------------------------------


def read_checkpoint(
    checkpoint: str | os.PathLike[str],
    state_dir: str | os.PathLike[str] | None = None,
    *,
    fs: CheckpointFS | None = None,
    unresolved_only: bool = False,
) -> CheckpointView:
    """Read a query's checkpoint; raises ``CheckpointFormatError`` for a malformed file.

    ``unresolved_only`` parses only the intents without ``resolved/N`` (the commit phase
    needs no more, and on an object store every file read is a request).
    """
    store = fs or LOCAL
    root = _location(checkpoint)
    state = _location(state_dir) if state_dir is not None else root
    if not store.exists(root):
        raise CheckpointFormatError(root, "does not exist or is not a directory")
    query_id = read_query_id(join(root, METADATA_FILE), store)
    resolved = frozenset(n for n, _ in _numbered(store, join(state, RESOLVED_DIR), _BATCH_NAME))
    intents: dict[int, Intent] = {}
    for batch, path in _numbered(store, join(state, INTENTS_DIR), _INTENT_NAME):
        if unresolved_only and batch in resolved:
            continue
        data = store.read(path)
        if data is None:
            continue  # removed meanwhile (an older resolved intent being forgotten)
        intent = parse_intent(data, path, batch)
        if query_id and intent.query_id and intent.query_id != query_id:
            raise CheckpointFormatError(
                path, f"intent of query {intent.query_id}, but the checkpoint is {query_id}"
            )
        intents[batch] = intent
    if query_id is None:
        ids = {i.query_id for i in intents.values() if i.query_id}
        if len(ids) > 1:
            raise CheckpointFormatError(
                join(state, INTENTS_DIR), f"intents of several queries {ids}"
            )
        query_id = next(iter(ids), None)
    return CheckpointView(
        checkpoint=root,
        state_dir=state,
        query_id=query_id,
        intents=intents,
        commits=frozenset(n for n, _ in _numbered(store, join(root, COMMITS_DIR), _BATCH_NAME)),
        resolved=resolved,
        fs=store,
    )


def _location(value: str | os.PathLike[str]) -> str:
    """A location as a string: URIs unchanged, local paths absolute."""
    text = os.fspath(value)
    if isinstance(value, Path) or ("://" not in text and not text.startswith("file:")):
        return str(Path(text).expanduser().absolute())
    return text


def parse_intent(data: bytes, path: object, batch: int | None = None) -> Intent:
    """Validate and parse an intent file's bytes."""
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointFormatError(path, f"not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise CheckpointFormatError(path, "an intent must be a JSON object")
    version = raw.get("version", INTENT_VERSION)
    if version != INTENT_VERSION:
        raise CheckpointFormatError(path, f"unsupported intent version {version!r}")
    n = _int(raw.get("batch"), path, "batch")
    if batch is not None and n != batch:
        raise CheckpointFormatError(path, f"batch {n} in a file named for batch {batch}")
    txns = raw.get("transactions")
    if not isinstance(txns, list):
        raise CheckpointFormatError(path, "'transactions' must be a list")
    parsed: list[IntentTransaction] = []
    for i, t in enumerate(txns):
        where = f"transactions[{i}]"
        if not isinstance(t, dict):
            raise CheckpointFormatError(path, f"{where} must be an object")
        tid = t.get("transactional_id")
        if not isinstance(tid, str) or not tid:
            raise CheckpointFormatError(path, f"{where}.transactional_id must be a string")
        role = t.get("role")
        if role is not None and role not in ROLES:
            raise CheckpointFormatError(path, f"{where}.role must be 'r' or 'w'")
        parsed.append(
            IntentTransaction(
                tid,
                _int(t.get("producer_id"), path, f"{where}.producer_id"),
                _int(t.get("epoch"), path, f"{where}.epoch"),
                role,
            )
        )
    written = raw.get("written_at_ms")
    return Intent(
        batch=n,
        transactions=tuple(parsed),
        query_id=_opt_str(raw.get("query_id"), path, "query_id"),
        transactional_id_prefix=_opt_str(
            raw.get("transactional_id_prefix"), path, "transactional_id_prefix"
        ),
        run_id=_opt_str(raw.get("run_id"), path, "run_id"),
        written_at_ms=None if written is None else _int(written, path, "written_at_ms"),
    )


def _int(value: object, path: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CheckpointFormatError(path, f"{name} must be a non-negative integer")
    return value


def _opt_str(value: object, path: object, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise CheckpointFormatError(path, f"{name} must be a string")
    return value


def _numbered(fs: CheckpointFS, directory: str, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    """Files named by a batch number (temporary and checksum files are skipped)."""
    out = []
    for name in fs.list(directory):
        match = pattern.match(name)
        if match:
            out.append((int(match.group(1)), join(directory, name)))
    return sorted(out)


def read_query_id(path: str | os.PathLike[str], fs: CheckpointFS | None = None) -> str | None:
    data = (fs or LOCAL).read(os.fspath(path))
    if data is None:
        return None
    try:
        first = data.decode().splitlines()[0]
        value = json.loads(first)["id"]
    except (IndexError, KeyError, TypeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointFormatError(path, f"not Spark's query metadata: {exc!r}") from None
    if not isinstance(value, str) or not value:
        raise CheckpointFormatError(path, "the query id must be a non-empty string")
    return value


# -- writing (the sink writes intents, whoever resolves writes resolved/N) ------------------


def write_intent(
    state_dir: str | os.PathLike[str], intent: Intent, fs: CheckpointFS | None = None
) -> str:
    """Write ``intents/N.json`` atomically (``CheckpointFS.write_atomic``)."""
    data = (json.dumps(intent.to_json(), sort_keys=True) + "\n").encode()
    path = join(_location(state_dir), INTENTS_DIR, f"{intent.batch}.json")
    (fs or LOCAL).write_atomic(path, data)
    return path


def write_resolved(
    state_dir: str | os.PathLike[str],
    batch: int,
    outcome: Outcome,
    by: str,
    fs: CheckpointFS | None = None,
) -> str:
    """Write ``resolved/N`` atomically once every transaction of batch N is complete."""
    body = {"batch": batch, "outcome": outcome.value, "by": by}
    data = (json.dumps(body, sort_keys=True) + "\n").encode()
    path = join(_location(state_dir), RESOLVED_DIR, str(batch))
    (fs or LOCAL).write_atomic(path, data)
    return path


def read_committing(fs: CheckpointFS, state_dir: str, batch: int) -> set[tuple[str, int, int]]:
    """``committing/N``: the (id, producer id, epoch) whose commits the query began."""
    data = fs.read(join(state_dir, COMMITTING_DIR, str(batch)))
    if data is None:
        return set()
    try:
        body = json.loads(data)
        return {
            (str(t["transactional_id"]), int(t["producer_id"]), int(t["epoch"]))
            for t in body["transactions"]
        }
    except (ValueError, KeyError, TypeError):
        return set()


def begun_commits(view: CheckpointView) -> set[tuple[str, int, int]]:
    """Every commit a query's commit phase wrote ahead (``committing/N``, any N)."""
    out: set[tuple[str, int, int]] = set()
    for batch, _ in _numbered(view.fs, join(view.state_dir, COMMITTING_DIR), _BATCH_NAME):
        out |= read_committing(view.fs, view.state_dir, batch)
    return out


# -- the decision rule ------------------------------------------------------------------------


def decide(view: CheckpointView, live: Iterable[LiveTransaction], prefix: str | None) -> Decisions:
    """Apply the decision rule to a checkpoint and the coordinator's open transactions.

    ``live`` is every transaction the coordinator has for the query's ids (any state);
    orphans are looked for only when both ``prefix`` and the query id are known.
    """
    decisions: list[TxnDecision] = []
    named: set[tuple[str, int, int]] = set()
    resolved_named: dict[tuple[str, int, int], int] = {}
    for batch in sorted(view.intents):
        intent = view.intents[batch]
        outcome = view.decision_for(batch)
        for t in intent.transactions:
            key = (t.transactional_id, t.producer_id, t.epoch)
            named.add(key)
            if batch in view.resolved:
                resolved_named[key] = batch
                continue
            reason = (
                f"batch {batch} is in the commit log (commits/{batch})"
                if outcome is Outcome.COMMIT
                else f"batch {batch} has an intent but no commits/{batch}"
            )
            decisions.append(
                TxnDecision(t.transactional_id, t.producer_id, t.epoch, outcome, batch, reason)
            )
    if prefix and view.query_id:
        wanted = query_prefix(prefix, view.query_id)
        for txn in sorted(live, key=lambda x: x.transactional_id):
            if txn.state not in _OPEN or not txn.transactional_id.startswith(wanted):
                continue
            key = (txn.transactional_id, txn.producer_id, txn.producer_epoch)
            if key in resolved_named:
                batch = resolved_named[key]
                decisions.append(
                    TxnDecision(
                        *key,
                        view.decision_for(batch),
                        batch,
                        f"resolved/{batch} exists but the transaction is still {txn.state}",
                    )
                )
            elif key not in named:
                decisions.append(
                    TxnDecision(
                        *key,
                        Outcome.ABORT,
                        None,
                        f"orphan: {txn.state} with the query's prefix {wanted!r} and no intent",
                    )
                )
    batches = tuple((i.batch, view.decision_for(i.batch)) for i in view.unresolved())
    return Decisions(tuple(decisions), batches)
