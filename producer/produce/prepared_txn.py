"""Which two-phase-commit protocol a cluster offers, and what became of a stored transaction.

Two choices are made here, each from the transaction coordinator's ApiVersions unless the
producer's config forces them (docs/client.md, "On Apache Kafka"):

* **prepare** (``sharetxn.prepare.mode``): ``enable2pc`` sends InitProducerId v6 with
  ``Enable2Pc`` (KIP-939: the coordinator then never aborts the transaction by its timeout);
  ``timeout`` prepares a plain transaction, which the coordinator aborts once it has been
  open for ``transaction.timeout.ms``; ``auto`` uses ``enable2pc`` where the coordinator
  serves InitProducerId v6 and falls back to ``timeout`` where the broker refuses 2PC.
* **resume** (``sharetxn.resume.mode``): ``keep-prepared`` sends InitProducerId with
  ``KeepPreparedTxn`` (KIP-939); ``stored-ids`` takes the stored (producer id, epoch) as
  they are and sends EndTxn with them, without InitProducerId (which would abort the
  transaction) -- the way Flink's Kafka sink recovers; ``auto`` tries ``keep-prepared``
  where InitProducerId v6 is served and uses ``stored-ids`` where it is not or where the
  coordinator answers UNSUPPORTED_VERSION (Apache Kafka 4.4 does not implement it).

``classify`` reads DescribeTransactions against stored ids, so a resume can tell an open
transaction from one that was committed, aborted (by its timeout or a fencing producer)
or replaced.  The client speaks the transaction-version-1 protocol (EndTxn up to v4), so
a completed transaction keeps its epoch and a coordinator abort moves it to epoch + 1.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from producer.produce.producer_config import PREPARE_MODES, RESUME_MODES, ProducerConfig
from producer.produce.txn_manager import (
    DifferentPreparedTransactionError,
    NoPreparedTransactionError,
    PreparedTransactionAbortedError,
    PreparedTransactionCommittedError,
    PreparedTransactionMismatchError,
    TwoPhaseCommitUnavailableError,
)
from producer.protocol.raw import describe_transactions_raw
from producer.protocol.types import TransactionDescription
from txn.api_keys import ApiKey
from txn.errors import ErrorCode, raise_for_code
from txn.ids import KEY_TYPE_TRANSACTION, NO_PRODUCER_EPOCH, NO_PRODUCER_ID

__all__ = [
    "PREPARE_MODES",
    "RESUME_MODES",
    "StoredTxnStatus",
    "StoredTxnView",
    "classify",
    "coordinator_api_span",
    "decide_enable2pc",
    "describe_transaction",
    "enable2pc_refused",
    "feature_level",
    "init_producer_id_request",
    "keep_prepared_unavailable",
    "keeps_prepared",
    "mismatch_error",
    "warn_timeout_bounded",
]

log = logging.getLogger("sharetxn.producer")

INIT_PRODUCER_ID_2PC_VERSION: Final = 6


_OPEN: Final = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort"})
_ABORTING: Final = frozenset({"PrepareAbort", "PrepareEpochFence", "CompleteAbort"})


class StoredTxnStatus(StrEnum):
    """What DescribeTransactions says about a stored (transactional id, producer id, epoch)."""

    OPEN = "open"  # still ongoing (or being completed) under exactly those ids
    COMMITTED = "committed"  # completed by a commit under those ids
    ABORTED = "aborted"  # aborted: by an EndTxn(abort), its timeout or a fencing producer
    DIFFERENT = "different"  # another transaction of the id is open
    GONE = "gone"  # the coordinator no longer shows how it ended


@dataclass(frozen=True, slots=True)
class StoredTxnView:
    """A classification and the description it came from."""

    status: StoredTxnStatus
    description: TransactionDescription | None

    @property
    def found(self) -> tuple[int, int]:
        d = self.description
        return (d.producer_id, d.producer_epoch) if d is not None else (-1, -1)

    def describe(self) -> str:
        d = self.description
        if d is None:
            return "the coordinator does not know the transactional id"
        return f"{d.state} producer id {d.producer_id} epoch {d.producer_epoch}"


def classify(desc: TransactionDescription | None, producer_id: int, epoch: int) -> StoredTxnView:
    """Classify ``desc`` for the stored ids (transaction version 1 client protocol).

    Open with the same ids: OPEN (PrepareAbort under them counts as ABORTED).  Completed
    with the same ids: COMMITTED or ABORTED.  Under the same producer id one epoch later,
    an abort in progress or completed is the coordinator's own abort of the stored
    transaction (the timeout, or a fencing InitProducerId, bumps the epoch first): ABORTED.
    Any other open transaction: DIFFERENT; anything else: GONE.
    """
    if desc is None:
        return StoredTxnView(StoredTxnStatus.GONE, None)
    same_pid = desc.producer_id == producer_id
    state = desc.state
    if same_pid and desc.producer_epoch == epoch:
        if state in {"PrepareAbort", "CompleteAbort"}:
            return StoredTxnView(StoredTxnStatus.ABORTED, desc)
        if state in _OPEN:
            return StoredTxnView(StoredTxnStatus.OPEN, desc)
        if state == "CompleteCommit":
            return StoredTxnView(StoredTxnStatus.COMMITTED, desc)
    if same_pid and desc.producer_epoch == epoch + 1 and state in _ABORTING:
        return StoredTxnView(StoredTxnStatus.ABORTED, desc)
    if state in _OPEN or state == "PrepareEpochFence":
        return StoredTxnView(StoredTxnStatus.DIFFERENT, desc)
    return StoredTxnView(StoredTxnStatus.GONE, desc)


def mismatch_error(
    view: StoredTxnView, transactional_id: str, producer_id: int, epoch: int
) -> PreparedTransactionMismatchError | None:
    """The typed error for a stored transaction that is not open any more (None if open)."""
    ids: dict[str, Any] = {
        "transactional_id": transactional_id,
        "producer_id": producer_id,
        "epoch": epoch,
        "found_producer_id": view.found[0],
        "found_epoch": view.found[1],
    }
    desc = view.description
    if view.status is StoredTxnStatus.OPEN:
        return None
    if view.status is StoredTxnStatus.COMMITTED:
        return PreparedTransactionCommittedError(**ids)
    if view.status is StoredTxnStatus.ABORTED and desc is not None:
        return PreparedTransactionAbortedError(
            state=desc.state, timeout_ms=desc.transaction_timeout_ms, **ids
        )
    if view.status is StoredTxnStatus.DIFFERENT:
        return DifferentPreparedTransactionError(**ids)
    return NoPreparedTransactionError(**ids)


def _connection(client: Any, node: int) -> Any:
    connection = getattr(client, "_connection", None)
    return connection(node) if connection is not None else None


def _coordinator_connection(client: Any, transactional_id: str) -> Any:
    """The connected connection to the id's coordinator; None if ``client`` is a test double."""
    if getattr(client, "_connection", None) is None:
        return None
    node = client.call(lambda: client.coordinator_for(KEY_TYPE_TRANSACTION, transactional_id))
    conn = _connection(client, node)
    if not conn.versions:
        client.call(conn.connect)
    return conn


def coordinator_api_span(
    client: Any, transactional_id: str, api_key: ApiKey
) -> tuple[int, int] | None:
    """The (min, max) versions of ``api_key`` the id's coordinator serves; None if unknown.

    None also when ``client`` is not a ``KafkaClient`` (a test double): callers then keep
    the behaviour of a cluster that serves every version.
    """
    conn = _coordinator_connection(client, transactional_id)
    if conn is None:
        return None
    span = conn.versions.get(api_key)
    return None if span is None else (int(span[0]), int(span[1]))


def feature_level(client: Any, transactional_id: str, feature: str) -> int | None:
    """The finalized level of ``feature`` at the id's coordinator (None if not advertised)."""
    conn = _coordinator_connection(client, transactional_id)
    if conn is None:
        return None
    level = conn.features.get(feature)
    return None if level is None else int(level)


def describe_transaction(
    client: Any, transactional_id: str, timeout_ms: int
) -> TransactionDescription | None:
    """DescribeTransactions for one id at its coordinator; None if the id is unknown."""

    def attempt() -> TransactionDescription:
        node = client.coordinator_for(KEY_TYPE_TRANSACTION, transactional_id)
        conn = _connection(client, node)
        version = conn.pick_version(ApiKey.DESCRIBE_TRANSACTIONS, 0)
        desc = describe_transactions_raw(conn, version, transactional_id)
        if desc.error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            client.forget_coordinator(KEY_TYPE_TRANSACTION, transactional_id)
        if desc.error not in (ErrorCode.NONE, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND):
            raise_for_code(desc.error, transactional_id=transactional_id)  # retriable: again
        return desc

    desc: TransactionDescription = client.call(attempt, timeout_ms=timeout_ms)
    return None if desc.error is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND else desc


# -- the choices, made once per producer ------------------------------------------------------


def init_producer_id_request(
    cfg: ProducerConfig,
    *,
    enable2pc: bool,
    keep_prepared_txn: bool,
    current: tuple[int, int] | None,
) -> tuple[dict[str, Any], int]:
    """InitProducerId's body and the lowest version that can carry it."""
    pid, epoch = current if current is not None else (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    body = {
        "transactional_id": cfg.transactional_id,
        "transaction_timeout": cfg.transaction_timeout_ms,
        "producer_id": pid,
        "producer_epoch": epoch,
        "enable2_pc": enable2pc,
        "keep_prepared_txn": keep_prepared_txn,
    }
    if enable2pc or keep_prepared_txn:
        return body, INIT_PRODUCER_ID_2PC_VERSION
    if current is not None:
        return body, 3  # KIP-360: bump the epoch of a known producer id
    return body, 0


def enable2pc_refused(transactional_id: str | None) -> TwoPhaseCommitUnavailableError:
    return TwoPhaseCommitUnavailableError(
        "the coordinator refused Enable2Pc (KIP-939): set "
        "transaction.two.phase.commit.enable=true on the brokers and grant the "
        "TWO_PHASE_COMMIT operation on the transactional id, or use "
        "sharetxn.prepare.mode=timeout",
        transactional_id=transactional_id,
        mode="enable2pc",
    )


def keep_prepared_unavailable(
    transactional_id: str, cause: Exception
) -> TwoPhaseCommitUnavailableError:
    return TwoPhaseCommitUnavailableError(
        f"the coordinator does not implement KeepPreparedTxn ({cause}); "
        "use sharetxn.resume.mode=stored-ids",
        transactional_id=transactional_id,
        mode="keep-prepared",
    )


def decide_enable2pc(cfg: ProducerConfig, client: Any) -> bool:
    """``sharetxn.prepare.mode`` applied to what the transaction coordinator serves."""
    if not cfg.two_phase_commit:
        return False
    if cfg.prepare_mode == "timeout":
        return False
    assert cfg.transactional_id is not None
    span = coordinator_api_span(client, cfg.transactional_id, ApiKey.INIT_PRODUCER_ID)
    served = span is None or span[1] >= INIT_PRODUCER_ID_2PC_VERSION
    if not served and cfg.prepare_mode == "enable2pc":
        raise TwoPhaseCommitUnavailableError(
            f"the transaction coordinator serves InitProducerId up to v{span and span[1]}, "
            f"KIP-939 needs v{INIT_PRODUCER_ID_2PC_VERSION} (Apache Kafka 4.x serves it "
            "only with unstable.api.versions.enable=true and "
            "transaction.two.phase.commit.enable=true); or use sharetxn.prepare.mode=timeout",
            transactional_id=cfg.transactional_id,
            mode="enable2pc",
        )
    if not served:
        warn_timeout_bounded(cfg, "the coordinator does not serve InitProducerId v6")
    return served


def keeps_prepared(cfg: ProducerConfig, client: Any) -> bool:
    """Whether ``resume`` tries InitProducerId with KeepPreparedTxn first."""
    if cfg.resume_mode != "auto":
        return cfg.resume_mode == "keep-prepared"
    assert cfg.transactional_id is not None
    span = coordinator_api_span(client, cfg.transactional_id, ApiKey.INIT_PRODUCER_ID)
    return span is None or span[1] >= INIT_PRODUCER_ID_2PC_VERSION


_warned_timeout_bounded: set[tuple[str, str]] = set()


def warn_timeout_bounded(cfg: ProducerConfig, why: str) -> None:
    """Say that prepares are timeout-bounded: a warning once per cluster and reason in a
    process (a Spark write task opens a producer per partition and batch), then debug."""
    key = (cfg.bootstrap_servers, why)
    level = logging.DEBUG if key in _warned_timeout_bounded else logging.WARNING
    _warned_timeout_bounded.add(key)
    log.log(
        level,
        "%s: prepared transactions of %r are plain transactions; the coordinator aborts "
        "one that stays open longer than transaction.timeout.ms=%d ms (bounded by the "
        "brokers' transaction.max.timeout.ms)",
        why,
        cfg.transactional_id,
        cfg.transaction_timeout_ms,
    )
