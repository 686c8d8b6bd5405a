"""Hand-made Spark checkpoints and the prepared transactions their intents name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from producer import TransactionalProducer
from producer.protocol.types import PreparedTxnState
from producer.twophase.spark_checkpoint import Intent, write_intent

#: A prepare bounded by the transaction timeout (1 s), as on stock Kafka.
TIMEOUT_BOUNDED = {"sharetxn.prepare.mode": "timeout", "transaction.timeout.ms": 1000}


def new_checkpoint(chk: Path, query: str) -> Path:
    """An empty checkpoint directory of query ``query``: ``commits/`` and ``metadata``."""
    (chk / "commits").mkdir(parents=True)
    (chk / "metadata").write_text(json.dumps({"id": query}) + "\n")
    return chk


def decided(chk: Path, intent: Intent) -> None:
    """``intent`` written, then Spark's decision on its batch (``commits/N``)."""
    write_intent(chk, intent)
    (chk / "commits" / str(intent.batch)).write_text("v1\n{}\n")


def prepared_and_left(
    bootstrap: str,
    tid: str,
    topic: str,
    value: bytes,
    partition: int | None = None,
    config: dict[str, Any] | None = None,
) -> PreparedTxnState:
    """``value`` sent in a 2PC transaction of ``tid``, prepared, and left to its coordinator."""
    producer = TransactionalProducer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": tid,
            "transaction.two.phase.commit.enable": True,
            **(config or {}),
        }
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, value, partition=partition)
        state = producer.prepare_transaction()
    finally:
        producer.close()
    return state
