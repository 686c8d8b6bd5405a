"""``ExactlyOnce.write``'s executor side: one prepared transaction per Spark partition.

Each partition's task opens a ``TransactionalProducer`` with the partition's own
transactional id (``init_transactions`` fences an earlier attempt of the same partition),
sends the partition's ``(key, value)`` records in one transaction, prepares it and returns
one receipt row ``(transactional id, producer id, epoch, records)`` to the driver.

Two ways to hand the rows to Python, chosen by what is installed:

* **Arrow** (``DataFrame.mapInArrow``, needs pandas as Spark's own Arrow paths do): the
  partition arrives as Arrow record batches of two binary columns, which go to
  ``send_many`` column by column -- no per-row pickling;
* **rows** (``RDD.mapPartitionsWithIndex``): Spark pickles each row to the worker.

Both paths write the same bytes: key and value columns are cast to binary by Spark
(strings as UTF-8, other types through their string form, as Spark's Kafka sink takes
them).  ``prepare`` itself needs no Spark: the chaos harness's micro-batch driver
(``chaos/eos_driver.py``) runs it as its write task.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from producer.produce.transactional_producer import TransactionalProducer
from producer.spark.resolve import Connection
from producer.twophase.spark_checkpoint import transactional_id

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["DEFAULT_TRANSACTION_TIMEOUT_MS", "RECEIPT_SCHEMA", "WriteTask", "prepare_writes"]

#: The write transactions' timeout where the cluster has no KIP-939 (a timeout-bounded
#: prepare, Apache Kafka's stock settings): Kafka's default ``transaction.max.timeout.ms``.
#: A crashed query must be restarted within it, or its decided batch cannot be committed.
DEFAULT_TRANSACTION_TIMEOUT_MS: Final = 900_000

RECEIPT_SCHEMA: Final = "tid string, pid long, epoch int, sent long"

Receipt = tuple[str, int, int, int]


@dataclasses.dataclass(frozen=True, slots=True)
class WriteTask:
    """One ``write`` call's settings, pickled to the executors."""

    conn: Connection
    producer_config: Mapping[str, Any]
    prefix: str
    query_id: str
    batch: int
    first_partition: int
    topic: str

    def prepare(
        self, index: int, records: Iterator[Iterable[tuple[bytes | None, bytes | None]]]
    ) -> Receipt | None:
        """Send every chunk of ``records`` in one transaction and prepare it.

        ``None`` for a partition without records (nothing to commit, no transaction).
        """
        partition = self.first_partition + index
        tid = transactional_id(self.prefix, self.query_id, "w", self.batch, partition)
        producer = TransactionalProducer(
            {
                **self.conn.producer_config(),
                "transaction.timeout.ms": DEFAULT_TRANSACTION_TIMEOUT_MS,
                **self.producer_config,
                "transactional.id": tid,
                "transaction.two.phase.commit.enable": True,
                "client.id": f"sharetxn-spark-write-{partition}",
            }
        )
        try:
            producer.init_transactions()  # fences an earlier attempt of this partition
            sent = 0
            for chunk in records:
                it = iter(chunk)
                first = next(it, None)
                if first is None:
                    continue
                if sent == 0:
                    producer.begin_transaction()
                # No future per record: a record that fails makes the prepare below raise.
                sent += producer.send_many(self.topic, itertools.chain((first,), it))
            if sent == 0:
                return None
            state = producer.prepare_transaction()
        finally:
            producer.close()
        return (state.transactional_id, state.producer_id, state.epoch, sent)

    def rows(self, index: int, rows: Iterable[Any]) -> Iterator[Receipt]:
        """``mapPartitionsWithIndex``: rows of ``(k, v)`` binary values."""
        receipt = self.prepare(index, iter([((_bytes(k), _bytes(v)) for k, v in rows)]))
        if receipt is not None:
            yield receipt

    def arrow(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """``mapInArrow``: record batches of the binary columns ``k`` and ``v``."""
        # Imported here: the module itself is Spark-free (the chaos harness's driver uses
        # ``prepare`` without PySpark).
        import pyarrow as pa  # noqa: PLC0415
        from pyspark import TaskContext  # noqa: PLC0415

        context = TaskContext.get()
        assert context is not None
        chunks = (
            zip(b.column(0).to_pylist(), b.column(1).to_pylist(), strict=True)
            for b in batches
            if b.num_rows
        )
        receipt = self.prepare(context.partitionId(), chunks)
        if receipt is not None:
            tid, pid, epoch, sent = receipt
            yield pa.RecordBatch.from_pydict(
                {"tid": [tid], "pid": [pid], "epoch": [epoch], "sent": [sent]},
                schema=pa.schema(
                    [
                        ("tid", pa.string()),
                        ("pid", pa.int64()),
                        ("epoch", pa.int32()),
                        ("sent", pa.int64()),
                    ]
                ),
            )


def arrow_available() -> bool:
    """Whether ``mapInArrow`` can run here (Spark checks for pandas on the driver)."""
    return all(importlib.util.find_spec(m) is not None for m in ("pandas", "pyarrow"))


def prepare_writes(projected: DataFrame, task: WriteTask) -> list[Receipt]:
    """Run ``task`` on every partition of ``projected`` (columns ``k``, ``v``); the receipts."""
    binary = projected.select(*(_as_binary(projected, name).alias(name) for name in ("k", "v")))
    if arrow_available():
        rows = binary.mapInArrow(task.arrow, RECEIPT_SCHEMA).collect()
        return [(str(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in rows]
    return list(binary.rdd.mapPartitionsWithIndex(task.rows).collect())


def _as_binary(df: DataFrame, name: str) -> Any:
    from pyspark.sql.types import BinaryType, StringType  # noqa: PLC0415

    column = df[name]
    kind = df.schema[name].dataType
    if isinstance(kind, BinaryType):
        return column
    if isinstance(kind, StringType):
        return column.cast("binary")
    return column.cast("string").cast("binary")


def _bytes(value: bytes | bytearray | None) -> bytes | None:
    return bytes(value) if isinstance(value, bytearray) else value
