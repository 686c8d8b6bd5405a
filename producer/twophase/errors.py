"""Errors of the commit phase of a Spark query's decided batches.

``producer.spark.errors`` imports both: the Spark integration's users catch them there.
"""

from __future__ import annotations

from txn.errors import SharetxnError

__all__ = ["DecidedBatchAbortedError", "ResolveError"]


class ResolveError(SharetxnError):
    """A decided batch could not be completed; retried by the next commit point."""


class DecidedBatchAbortedError(ResolveError):
    """Spark decided a batch (``commits/N``) but the cluster aborted a prepared transaction.

    On a cluster without KIP-939 the write transactions are prepared with a timeout
    (Apache Kafka's stock settings): a query restarted, or a commit phase run, after
    ``transaction.timeout.ms`` finds them aborted.  A producer that fenced the id has the
    same effect anywhere.  The transaction's records are discarded
    while Spark's commit log says the batch is done: the query stops instead of passing
    over the loss.
    """

    def __init__(
        self,
        *,
        batch: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        checkpoint: str,
        detail: str,
    ) -> None:
        self.batch = batch
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.epoch = epoch
        super().__init__(
            f"batch {batch} is decided (commits/{batch}) but the cluster aborted its prepared "
            f"transaction {transactional_id} (producer id {producer_id}, epoch {epoch}): "
            f"{detail}; heuristic hazard: the batch's outputs in it are lost. Cause: the "
            "transaction was prepared without KIP-939 (a timeout-bounded prepare, Apache "
            "Kafka's stock settings) and not committed within its transaction.timeout.ms, or "
            "a producer of the same transactional id fenced it. Fix: enable KIP-939 on the "
            "brokers (transaction.two.phase.commit.enable=true) or raise "
            "transaction.timeout.ms in producer_config (up to the brokers' "
            "transaction.max.timeout.ms) and restart a failed query within it. The query "
            f"stays stopped: if `sharetxn txn describe` shows no transaction of batch {batch} "
            f"committed, delete {checkpoint}/commits/{batch} and restart it to run the batch "
            "again from its stored offsets (docs/spark.md, 'On Apache Kafka')"
        )
