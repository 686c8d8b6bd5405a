"""``spark.readStream.format("kafka-share")``: a share-group source whose acks are 2PC.

The offset is a ticket ``{"v": 1, "batch": N}`` naming Spark's batch N; it advances only
when the share group has records to deliver.  Each read task of batch N opens its own
share consumer, acquires up to ``maxRecordsPerPartition`` records, stages ACCEPT for
them in its own transaction ``{prefix}-{queryId}-r-{N mod 2}-{task}``, *prepares* it and
yields the rows with the receipt of that transaction.  Nothing is acknowledged until the
sink's intent for batch N exists and Spark wrote ``commits/N`` (DESIGN §6).

On a cluster without KIP-1289 (Apache Kafka) the source refuses to start, unless the
user opts in to ``deliverySemantics=at-least-once`` (``producer.spark.held``): then the
driver acquires each batch and acknowledges it after ``commits/N``; the receipt columns
are null.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from producer.spark.errors import ResolveError, SparkConfigError
from producer.spark.options import SourceOptions
from producer.twophase.spark_checkpoint import transactional_id
from txn.errors import KafkaProtocolError, RetriableError
from txn.ids import TopicPartition

if TYPE_CHECKING:
    import pyarrow as pa

    from producer.admin import Admin
    from producer.protocol.types import Record
    from producer.spark.held import DriverShareConsumer

# Light on purpose: Spark imports this module in every Python process of a query (the
# data source lookup, its creation, the streaming runner, the executors' workers) to
# unpickle the source.  The clients, the protocol library and pyarrow are imported where
# they are used (the driver's reader, the read tasks), not here.

log = logging.getLogger(__name__)

FORMAT = "kafka-share"
TICKET_VERSION = 1
# Spark's Kafka source columns (headers only with includeHeaders=true, as there), then
# the share group's and the receipt of the read task.
KAFKA_COLUMNS = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS_COLUMN = "headers array<struct<key: string, value: binary>>"
SHARE_COLUMNS = (
    "delivery_count int, receipt_batch long, receipt_transactional_id string, "
    "receipt_producer_id long, receipt_producer_epoch int"
)
RECEIPT_COLUMNS = (
    "receipt_batch",
    "receipt_transactional_id",
    "receipt_producer_id",
    "receipt_producer_epoch",
)


def schema_ddl(include_headers: bool = False) -> str:
    """The source's schema as DDL (``includeHeaders`` adds the headers column)."""
    middle = [HEADERS_COLUMN] if include_headers else []
    return ", ".join([KAFKA_COLUMNS, *middle, SHARE_COLUMNS])


def ticket(batch: int) -> dict[str, int]:
    return {"v": TICKET_VERSION, "batch": batch}


def ticket_batch(offset: dict[str, Any]) -> int:
    if offset.get("v") != TICKET_VERSION or not isinstance(offset.get("batch"), int):
        msg = f"kafka-share: not a kafka-share offset: {offset!r} (another source's checkpoint?)"
        raise SparkConfigError(msg)
    return int(offset["batch"])


@dataclass(frozen=True)
class ReadTask(InputPartition):
    """Everything one read task needs (pickled to the executor)."""

    bootstrap_servers: str
    group_id: str
    topics: tuple[str, ...]
    query_id: str
    prefix: str
    batch: int
    index: int
    max_records: int
    poll_timeout_ms: int
    client_config: tuple[tuple[str, str], ...] = ()  # security options (kafka.*)
    include_headers: bool = False

    @property
    def transactional_id(self) -> str:
        return transactional_id(self.prefix, self.query_id, "r", self.batch, self.index)


class ShareDataSource(DataSource):
    """The data source registered as ``kafka-share`` by ``producer.spark.register``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        from producer.spark.cluster_support import check_cluster  # noqa: PLC0415

        opts = SourceOptions.parse(self.options)  # fail at .load(), not at the first batch
        try:
            check_cluster(opts)  # a cluster without KIP-1289 or share groups: refuse now
        except (RetriableError, OSError) as exc:
            log.warning("kafka-share: cluster not reachable at load, checked at start: %r", exc)
        return schema_ddl(opts.include_headers)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return ShareStreamReader(SourceOptions.parse(self.options))


class ShareStreamReader(DataSourceStreamReader):
    """Runs on the driver (one long-lived worker per query) except ``read``."""

    def __init__(self, options: SourceOptions) -> None:
        from producer.spark.resolve import Connection  # noqa: PLC0415

        self.opts = options
        self.ckpt = options.open_checkpoint()
        self._conn = Connection(options.bootstrap_servers, dict(options.client_config))
        self._admin: Admin | None = None
        self._query_id: str | None = None
        self._topics: tuple[str, ...] = options.topics  # subscribePattern: resolved
        self._partitions: list[TopicPartition] = []
        self._held: DriverShareConsumer | None = None  # deliverySemantics=at-least-once
        #: End offsets of partitions the group has not written yet, when a batch last looked
        #: at them (Kafka persists nothing until the first acknowledgement), and the group's
        #: progress then: forgotten once the progress moves.
        self._tried_ends: dict[TopicPartition, int] = {}
        self._progress_seen: dict[TopicPartition, int] = {}

    # -- driver ---------------------------------------------------------------------------

    def _start(self) -> str:
        """Once per run: check the set-up, then recover what the last run left open."""
        if self._query_id is not None:
            return self._query_id
        opts = self.opts
        self._check_server()
        self._check_cluster()
        query_id = self.ckpt.query_id()
        admin = self._admin_client()
        topics = admin.list_topics()
        missing = [t for t in opts.topics if t not in topics]
        if missing:
            msg = f"kafka-share: subscribed topic(s) {', '.join(missing)} do not exist"
            raise SparkConfigError(msg)
        self._subscribe(topics)
        if opts.at_least_once and not self._topics:
            # The driver's one consumer subscribes once, now: it needs a topic.
            msg = (
                f"kafka-share: subscribePattern {opts.topic_pattern!r} matches no topic; "
                f"with deliverySemantics={opts.delivery_semantics} it is resolved once, at start"
            )
            raise SparkConfigError(msg)
        self._check_group(admin)
        view = self.ckpt.view()
        prefixes = {opts.prefix} | {
            i.transactional_id_prefix for i in view.intents.values() if i.transactional_id_prefix
        }
        from producer.spark.resolve import recover  # noqa: PLC0415

        report = recover(self.ckpt, self._conn, prefixes, by=f"kafka-share {query_id}")
        if report.committed or report.aborted:
            log.warning(
                "kafka-share recovery of query %s: %d transaction(s) committed, %d aborted "
                "(batches %s)",
                query_id,
                report.committed,
                report.aborted,
                list(report.batches),
            )
        if opts.at_least_once:
            # After _check_group: the group's start offset is set before the member joins.
            from producer.spark.held import DriverShareConsumer  # noqa: PLC0415

            self._held = DriverShareConsumer(opts, self._task_count(), self._topics)
        self._query_id = query_id
        return query_id

    def _subscribe(self, listing: dict[str, list[int]]) -> None:
        """The subscribed topics and their partitions, from the cluster's topic listing."""
        topics = self.opts.matching(listing)
        if self.opts.topic_pattern is not None and topics != self._topics:
            log.info(
                "kafka-share: subscribePattern %r matches %s",
                self.opts.topic_pattern,
                ", ".join(topics) or "no topic",
            )
        self._topics = topics
        self._partitions = [TopicPartition(t, p) for t in topics for p in listing[t]]

    def _task_count(self) -> int:
        return self.opts.task_count(len(self._partitions))

    def _check_cluster(self) -> None:
        """Refuse a cluster without KIP-1289 (unless at least once) or without share groups."""
        from producer.spark.cluster_support import check_cluster  # noqa: PLC0415

        try:
            check_cluster(self.opts)
        except (RetriableError, OSError) as exc:
            # Unreachable now: the admin calls below retry and report it; the executors'
            # transactional share consumers refuse a cluster without KIP-1289 as well.
            log.warning("kafka-share: could not probe the cluster's APIs: %r", exc)

    def _check_server(self) -> None:
        """With ``ExactlyOnce.read_stream``: the options must still be the sink's."""
        hello = getattr(self.ckpt.fs, "hello", None)
        if hello is None:
            return
        info = hello()
        for key, mine in (
            ("checkpointLocation", self.opts.checkpoint),
            ("transactional.id.prefix", self.opts.prefix),
        ):
            if info.get(key) != mine:
                msg = (
                    f"kafka-share: option {key}={mine!r} but the ExactlyOnce that started "
                    f"this source has {info.get(key)!r}: configure it once, on ExactlyOnce"
                )
                raise SparkConfigError(msg)

    def _check_group(self, admin: Admin) -> None:
        group = self.opts.group_id
        listing = {g.group_id: g for g in admin.list_groups()}
        found = listing.get(group)
        if found is not None and found.type.lower() not in ("share", ""):
            msg = f"kafka-share: group {group!r} is a {found.type} group, not a share group"
            raise SparkConfigError(msg)
        from producer.admin import RESOURCE_GROUP  # noqa: PLC0415

        configs = admin.describe_configs(RESOURCE_GROUP, group, explicit_only=True)
        new = found is None and not configs
        wanted: dict[str, str] = {}
        if new and self.opts.starting_offsets is None:
            msg = (
                f"kafka-share: share group {group!r} does not exist (no member ever joined "
                "and it has no group configs). Set the option startingOffsets=earliest|latest "
                "to create it from this query, or configure it first, e.g. "
                "share.auto.offset.reset with kafka-configs.sh --entity-type groups"
            )
            raise SparkConfigError(msg)
        if new and self.opts.starting_offsets is not None:
            # Like Spark's Kafka source: startingOffsets only applies to a new group.
            wanted["share.auto.offset.reset"] = self.opts.starting_offsets
        if configs.get("share.isolation.level") != "read_committed":
            # Aborted records (an upstream query's aborted re-runs) must never be read.
            wanted["share.isolation.level"] = "read_committed"
        if wanted:
            admin.alter_group_configs(group, wanted)
            log.info("kafka-share: share group %s configured with %s", group, wanted)

    def _records_available(self) -> bool:
        """Whether the group has records past its start offset (SPSO < LSO somewhere).

        A partition the group has not written yet has no start offset to compare (Kafka
        persists it with the first acknowledgement): whether records wait there depends on
        ``share.auto.offset.reset``.  So a batch looks; if the group's progress has not
        moved since (the batch found nothing: a group at ``latest``), the partition is not
        looked at again until its end offset moves, and the query idles.
        """
        admin = self._admin_client()
        if self.opts.topic_pattern is not None:
            self._subscribe(admin.list_topics())  # at every trigger, as Spark's Kafka source
        if not self._partitions:
            return False
        spso = admin.share_group_progress(self.opts.group_id, list(self._topics))
        if spso != self._progress_seen:  # the last batch got somewhere: look everywhere again
            self._tried_ends.clear()
            self._progress_seen = dict(spso)
        available = False
        unwritten: dict[TopicPartition, int] = {}
        for tp in self._partitions:
            end = admin.list_offsets(tp, -1, read_committed=True)
            start = spso.get(tp, -1)
            if start >= 0:
                available = available or end > start
            elif end > 0:
                unwritten[tp] = end
                available = available or self._tried_ends.get(tp) != end
        if available:
            self._tried_ends.update(unwritten)
        return available

    def _commit_decided(self) -> None:
        from producer.spark.resolve import commit_decided  # noqa: PLC0415

        commit_decided(self.ckpt, self._conn, by="kafka-share source")

    def initialOffset(self) -> dict[str, int]:
        self._start()
        return ticket(-1)

    def _stored_ticket(self, batch: int) -> dict[str, int]:
        if batch < 0:
            return ticket(-1)
        return self.ckpt.planned_ticket(batch) or ticket(batch)

    # PySpark 4.3 added latestOffset(start, limit); it still calls this older form.
    def latestOffset(self) -> dict[str, int]:  # type: ignore[override,unused-ignore]
        self._start()
        last = self.ckpt.last_planned_batch()
        # "No new data" must repeat exactly what Spark stored for the last batch (after a
        # no-data batch of a stateful query that is not ticket(last)).
        unchanged = self._stored_ticket(last)
        if last >= 0 and not self.ckpt.is_committed(last):
            return unchanged  # Spark re-runs it first
        if self._held is not None:
            return self._latest_held(last, unchanged)
        try:
            # A decided batch is committed before its records are looked at again, so acks
            # still TX_PENDING in a committed batch do not look like records to read.
            self._commit_decided()
            available = self._records_available()
        except (KafkaProtocolError, OSError) as exc:
            # The broker is unreachable: no new batch now, the next trigger asks again.
            log.warning("kafka-share: broker unavailable, no new batch this trigger: %r", exc)
            self._reset_admin()
            return unchanged
        return ticket(last + 1) if available else unchanged

    def _latest_held(self, last: int, unchanged: dict[str, int]) -> dict[str, int]:
        """At least once: acknowledge what Spark committed, then acquire the next batch."""
        assert self._held is not None
        try:
            self._commit_decided()  # an ExactlyOnce sink's decided outputs
            got = self._held.acquire(last + 1, self.ckpt.is_committed)
        except (KafkaProtocolError, OSError) as exc:
            log.warning("kafka-share: broker unavailable, no new batch this trigger: %r", exc)
            return unchanged
        return ticket(last + 1) if got else unchanged

    def _admin_client(self) -> Admin:
        if self._admin is None:
            from producer.admin import Admin  # noqa: PLC0415

            self._admin = Admin(
                {
                    "bootstrap.servers": self.opts.bootstrap_servers,
                    "client.id": "sharetxn-spark-source",
                    **dict(self.opts.client_config),
                }
            )
        return self._admin

    def _reset_admin(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(Exception):
                self._admin.close()
            self._admin = None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        query_id = self._start()
        batch = ticket_batch(end)
        first = ticket_batch(start)
        if batch <= first:
            return []
        # Batch N reuses the ids of N-2 (the sink's write transactions in both modes):
        # N-2 (and everything before) must be complete.
        self._commit_decided()
        view = self.ckpt.view(unresolved_only=True)
        open_ = [b for b in view.intents if b < batch - 1 and b not in view.resolved]
        if open_:
            msg = (
                f"kafka-share: batch(es) {open_} are not resolved before batch {batch}; "
                f"run `sharetxn recover --checkpoint {self.opts.checkpoint}`"
            )
            raise ResolveError(msg)
        if self._held is not None:
            # Planned by latestOffset here, or a re-run after a restart: acquire again.
            records = self._held.acquire(batch, self.ckpt.is_committed)
            from producer.spark.held import split  # noqa: PLC0415

            return split(records, batch, self._task_count())
        if not self._topics:
            return []  # subscribePattern matches no topic (any more)
        count = self._task_count()
        per_task = self.opts.records_per_task(len(self._partitions), count)
        return [
            ReadTask(
                self.opts.bootstrap_servers,
                self.opts.group_id,
                self._topics,
                query_id,
                self.opts.prefix,
                batch,
                index,
                per_task,
                self.opts.poll_timeout_ms,
                self.opts.client_config,
                self.opts.include_headers,
            )
            for index in range(count)
        ]

    def commit(self, end: dict[str, Any]) -> None:
        # Spark calls this lazily, after commits/N and offsets/N+1 exist.
        self._start()
        self._commit_decided()
        if self._held is not None:
            try:
                self._held.settle(self.ckpt.is_committed)
            except (KafkaProtocolError, OSError) as exc:  # the next trigger settles again
                log.warning("kafka-share: acknowledging committed batches failed: %r", exc)

    def stop(self) -> None:
        try:
            if self._query_id is not None:
                self._commit_decided()
        except Exception as exc:  # never hide the error that stopped the query
            log.warning("kafka-share: committing decided batches on stop failed: %r", exc)
        finally:
            if self._held is not None:
                held, self._held = self._held, None
                try:
                    held.close(self.ckpt.is_committed)
                except Exception as exc:  # the records come back when their locks expire
                    log.warning("kafka-share: acknowledging on stop failed: %r", exc)
            if self._admin is not None:
                self._admin.close()
                self._admin = None

    # -- executors ------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from producer.spark.held import HeldTask  # noqa: PLC0415

        if isinstance(partition, HeldTask):
            records, batch = partition.records, partition.batch
            arrow = to_arrow(records, batch, None, None, None, self.opts.include_headers)
            return iter([arrow])
        assert isinstance(partition, ReadTask)
        return read_task(partition)


def _check_task_query(task: ReadTask) -> None:
    """A read task must belong to the query whose checkpoint named its ids."""
    from pyspark import TaskContext  # noqa: PLC0415 - only on executors

    context = TaskContext.get()
    running = context.getLocalProperty("sql.streaming.queryId") if context else None
    if running and running != task.query_id:
        msg = (
            f"kafka-share: this query is {running} but checkpointLocation "
            f"belongs to query {task.query_id}: give the source the query's own "
            "checkpointLocation (two queries must never share one)"
        )
        raise SparkConfigError(msg)


#: How long a read task waits for its share-group member to be assigned partitions before
#: its ``pollTimeoutMs`` starts (the member's heartbeat interval, 5 s by default, and more).
ASSIGNMENT_WAIT_S = 15.0


def read_task(task: ReadTask) -> Iterator[pa.RecordBatch]:
    """Acquire, stage ACCEPT in a prepared transaction, then yield the rows (Arrow)."""
    tid = task.transactional_id
    _check_task_query(task)
    from producer.consumer.share_consumer import ShareConsumer  # noqa: PLC0415
    from producer.produce.transactional_producer import TransactionalProducer  # noqa: PLC0415

    producer = TransactionalProducer(
        {
            "bootstrap.servers": task.bootstrap_servers,
            "transactional.id": tid,
            "transaction.two.phase.commit.enable": True,
            "client.id": f"sharetxn-spark-read-{task.index}",
            **dict(task.client_config),
        }
    )
    consumer = ShareConsumer(
        {
            "bootstrap.servers": task.bootstrap_servers,
            "group.id": task.group_id,
            "share.acknowledgement.mode": "transactional",
            "client.id": f"sharetxn-spark-read-{task.index}",
            "max.poll.records": min(task.max_records, 10000),
            # Short broker-side waits: the driver only plans a batch when records are there,
            # so an empty fetch means the others took them; do not hold the batch up.
            "fetch.max.wait.ms": 100,
            **dict(task.client_config),
        }
    )
    records: list[Record] = []
    try:
        # Fences an earlier attempt of this task (its prepared acks revert to available).
        producer.init_transactions()
        consumer.subscribe(task.topics)
        # ``pollTimeoutMs`` counts from the member's assignment: the driver plans a batch
        # only when records are there, and a new member's partitions may come a heartbeat
        # interval after it joined (the group's assignment interval, Kafka 4.4's 1 s).
        assigned_by = time.monotonic() + ASSIGNMENT_WAIT_S
        while not consumer.assignment() and time.monotonic() < assigned_by:
            records.extend(consumer.poll(0.05))
            consumer.acknowledge_delivered()
        deadline = time.monotonic() + task.poll_timeout_ms / 1000
        while len(records) < task.max_records:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            got = consumer.poll(min(remaining, 0.2) if records else remaining)
            consumer.acknowledge_delivered()  # ACCEPT the whole poll (staged, not sent)
            records.extend(got)
            if records and not got:
                break  # what was there has been taken; do not wait for more
        if not records:
            return
        producer.begin_transaction()
        producer.send_share_acks_to_transaction(
            consumer.acknowledgements(), consumer.group_metadata()
        )
        state = producer.prepare_transaction()
    finally:
        consumer.close()
        producer.close()
    yield to_arrow(
        records,
        task.batch,
        state.transactional_id,
        state.producer_id,
        state.epoch,
        task.include_headers,
    )


@functools.cache
def arrow_schema(include_headers: bool = False) -> pa.Schema:
    """The source's schema as Spark converts it to Arrow (what ``read`` must yield).

    Spark reads a Python data source's Arrow batches with timestamps in UTC; PySpark 4.3
    requires the time zone to be named, older releases take no such argument.
    """
    from pyspark.sql.pandas.types import to_arrow_schema  # noqa: PLC0415 - imports pyarrow

    struct = _struct(include_headers)
    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(struct, timezone="UTC")
    return to_arrow_schema(struct)


def _struct(include_headers: bool) -> StructType:
    """``schema_ddl`` as a ``StructType`` (``fromDDL`` needs a JVM; executors have none)."""
    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    headers = [StructField("headers", ArrayType(header))] if include_headers else []
    return StructType(
        [
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("timestamp", TimestampType()),
            StructField("timestampType", IntegerType()),
            *headers,
            StructField("delivery_count", IntegerType()),
            StructField("receipt_batch", LongType()),
            StructField("receipt_transactional_id", StringType()),
            StructField("receipt_producer_id", LongType()),
            StructField("receipt_producer_epoch", IntegerType()),
        ]
    )


def to_arrow(
    records: Sequence[Record],
    batch: int,
    tid: str | None,
    producer_id: int | None,
    epoch: int | None,
    include_headers: bool = False,
) -> pa.RecordBatch:
    """The rows of one read task as one Arrow record batch, built column by column.

    Spark takes a ``pyarrow.RecordBatch`` from ``read`` as is; yielding tuples would
    make PySpark convert every value of every row in Python.  An at-least-once batch has
    no read transaction: its receipt columns other than the batch are null.
    """
    import pyarrow as pa  # noqa: PLC0415 - only where batches are built

    n = len(records)
    schema = arrow_schema(include_headers)

    def column(name: str) -> list[Any]:
        return list(map(attrgetter(name), records))

    columns = [
        column("key"),
        column("value"),
        column("topic"),
        column("partition"),
        column("offset"),
        [max(t, 0) * 1000 for t in column("timestamp")],  # ms -> Spark's microseconds
        column("timestamp_type"),
    ]
    if include_headers:
        headers = column("headers")
        columns.append([[{"key": k, "value": v} for k, v in h] if h else [] for h in headers])
    columns.append(column("delivery_count"))
    constants = [batch, tid, producer_id, epoch]
    arrays = [
        pa.array(values, type=field.type) for values, field in zip(columns, schema, strict=False)
    ]
    arrays += [
        pa.array([value] * n, type=field.type)
        for value, field in zip(constants, list(schema)[len(columns) :], strict=True)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
