"""``ExactlyOnce``: the foreachBatch side of the two-phase commit (DESIGN §6).

    eos = ExactlyOnce(bootstrap_servers=..., checkpoint_location=...)
    df = eos.read_stream(spark, subscribe="in", group_id="g")

    def enrich(df, batch_id):
        eos.write(df.select(...), "out", key_col="key", value_col="value")

    query = eos.write_stream(df, enrich)   # foreachBatch(eos.wrap(enrich)) + the checkpoint

``wrap`` persists the input batch, collects every read receipt from the *input* rows,
runs the function (whose ``write`` calls prepare one transaction per Spark partition),
checks that every prepared transaction is still the one recorded, and writes
``intents/N.json`` before returning.  Spark then writes ``commits/N``; the driver's
committer (``producer/spark/committer.py``: a daemon thread polling the checkpoint, woken
by the progress listener) commits the batch within seconds, also when no batch follows.

Behind any other source (Spark's ``format("kafka")``, a file source) a batch has no read
transactions, only the write transactions: the same intent, the same commit after
``commits/N``.  Which source a batch came from is read from Spark's ``offsets/N`` (a
kafka-share offset is ``{"v": 1, "batch": N}``), not from the columns, so a kafka-share
query whose receipt columns were dropped is still refused.  Without the kafka-share
source (which recovers at its start) the sink runs the start-up recovery itself: in
``write_stream`` before the query starts, and before the first batch of a run.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, SparkSession, functions
from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    StreamingQueryListener,
)
from pyspark.sql.streaming.query import StreamingQuery

from producer.admin import Admin
from producer.produce.transactional_producer import TransactionalProducer
from producer.protocol.security import SECURITY_KEYS
from producer.spark.checkpoint import Checkpoint
from producer.spark.committer import (
    DEFAULT_FAILURE_TIMEOUT_S,
    DEFAULT_POLL_S,
    CommitLag,
    Committer,
)
from producer.spark.connect import refuse_connect
from producer.spark.errors import BatchFencedError, SparkConfigError
from producer.spark.options import DEFAULT_PREFIX, FIXED_OPTIONS, check_prefix
from producer.spark.resolve import Connection, commit_decided, fenced_transaction, recover
from producer.spark.source import RECEIPT_COLUMNS
from producer.spark.write_task import WriteTask, prepare_writes
from producer.twophase.checkpoint_fs import is_local
from producer.twophase.spark_checkpoint import (
    RESOLVED_DIR,
    Intent,
    IntentTransaction,
    query_prefix,
    write_intent,
)

if TYPE_CHECKING:
    from producer.spark.fs_server import CheckpointServer

log = logging.getLogger(__name__)

BatchFunction = Callable[[DataFrame, int], None]


@dataclasses.dataclass
class _Batch:
    batch: int
    query_id: str
    partitions_used: int = 0
    reads: list[IntentTransaction] = dataclasses.field(default_factory=list)
    writes: list[IntentTransaction] = dataclasses.field(default_factory=list)
    records_written: int = 0


class ExactlyOnce:
    """The exactly-once pipeline's one configuration: its source, its sink, its checkpoint.

    ``read_stream`` starts the ``kafka-share`` source with this object's brokers, prefix,
    security options and checkpoint; ``write_stream`` (or ``foreachBatch(eos.wrap(fn))``)
    runs the sink with the same checkpoint.  Checkpoint I/O goes through Hadoop's
    FileSystem API in the driver's JVM, so any location Spark accepts works.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        checkpoint_location: str,
        transactional_id_prefix: str = DEFAULT_PREFIX,
        *,
        producer_config: Mapping[str, Any] | None = None,
        commit_poll_s: float = DEFAULT_POLL_S,
        commit_failure_timeout_s: float = DEFAULT_FAILURE_TIMEOUT_S,
    ) -> None:
        security = {k: v for k, v in (producer_config or {}).items() if k in SECURITY_KEYS}
        self.conn = Connection(bootstrap_servers, security)  # security options for every client
        if not str(checkpoint_location).strip():
            msg = "the checkpoint location is empty"
            raise SparkConfigError(msg)
        self.location = str(checkpoint_location).strip()
        self._checkpoint: Checkpoint | None = None
        self._server: CheckpointServer | None = None
        self.prefix = check_prefix(transactional_id_prefix)
        self.producer_config = dict(producer_config or {})
        for key in ("transactional.id", "transaction.two.phase.commit.enable"):
            if key in self.producer_config:
                msg = f"producer_config must not set {key!r}: the sink sets it per partition"
                raise SparkConfigError(msg)
        self._current = threading.local()
        self._listener: _CommitListener | None = None
        self._session: SparkSession | None = None  # the session that starts the query
        self._query: StreamingQuery | None = None
        self._committer: Committer | None = None
        self._commit_lag = CommitLag()
        if commit_poll_s <= 0 or commit_failure_timeout_s <= 0:
            msg = "commit_poll_s and commit_failure_timeout_s must be positive"
            raise SparkConfigError(msg)
        self.commit_poll_s = commit_poll_s
        self.commit_failure_timeout_s = commit_failure_timeout_s
        self._recovered: set[str] = set()  # query ids whose start-up recovery ran here
        self.batches_committed = 0
        self.last_timings: dict[str, float] = {}

    # -- the checkpoint ----------------------------------------------------------------------

    def open_checkpoint(self, spark: SparkSession | None = None) -> Checkpoint:
        """The checkpoint through the session's Hadoop FileSystem (local path: POSIX)."""
        if self._checkpoint is None:
            session = spark or SparkSession.getActiveSession()
            if session is not None:
                refuse_connect(session)
                from producer.twophase.hadoop_fs import HadoopFS  # noqa: PLC0415

                fs = HadoopFS.for_session(session, self.location)
                self._checkpoint = Checkpoint(fs.root, fs)
            elif is_local(self.location):
                self._checkpoint = Checkpoint.local(self.location)
            else:
                msg = (
                    f"checkpoint {self.location!r} is reached through Hadoop's FileSystem "
                    "in the driver's JVM: create the SparkSession first"
                )
                raise SparkConfigError(msg)
        return self._checkpoint

    @property
    def checkpoint(self) -> Checkpoint:
        return self.open_checkpoint()

    # -- configure once: the source and the query ---------------------------------------------

    def read_stream(
        self,
        spark: SparkSession,
        *,
        group_id: str,
        subscribe: str | None = None,
        **options: str,
    ) -> DataFrame:
        """``spark.readStream.format("kafka-share")`` configured from this object.

        ``options`` are the source's other options (``subscribePattern`` instead of
        ``subscribe``, ``includeHeaders``, ``maxRecordsPerPartition``, ``startingOffsets``,
        ``numPartitions``, ``pollTimeoutMs``); the brokers, the prefix,
        the security settings and the checkpoint come from here, and a different value for
        one of them is refused.
        """
        refuse_connect(spark)
        from producer.spark import register  # noqa: PLC0415

        register(spark)
        checkpoint = self.open_checkpoint(spark)
        fixed = {
            "kafka.bootstrap.servers": self.conn.bootstrap_servers,
            "checkpointLocation": checkpoint.location,
            "transactional.id.prefix": self.prefix,
            **{f"kafka.{k}": str(v) for k, v in self.conn.client_config.items()},
        }
        self._refuse_overrides(options, fixed)
        reader = spark.readStream.format("kafka-share")
        named = {"kafka.share.group.id": group_id}
        if subscribe is not None:
            named["subscribe"] = subscribe
        for key, value in {**options, **fixed, **named}.items():
            reader = reader.option(key, str(value))
        if not is_local(checkpoint.location):
            # The source's reader has no JVM: it reaches the checkpoint through this process.
            server = self._serve(checkpoint)
            reader = reader.option("sharetxn.checkpointServer", server.address)
            reader = reader.option("sharetxn.checkpointToken", server.token)
        return reader.load()

    def _refuse_overrides(self, options: Mapping[str, str], fixed: Mapping[str, str]) -> None:
        lowered = {k.lower(): k for k in fixed}
        for key, value in options.items():
            low = key.lower()
            if low in ("subscribe", "group.id", "kafka.share.group.id") or low.startswith(
                "sharetxn."
            ):
                msg = f"read_stream: pass {key!r} as its keyword argument, not as an option"
                raise SparkConfigError(msg)
            name = lowered.get(low) or (low if low in FIXED_OPTIONS else None)
            if name is None:
                continue
            mine = fixed.get(name)
            if name == "checkpointLocation" and str(value) in (self.location, mine):
                continue
            if mine != str(value):
                msg = (
                    f"read_stream: option {key}={value!r} differs from the ExactlyOnce "
                    f"configuration ({mine!r}): the source and the sink must share it; set "
                    "it once, on ExactlyOnce"
                )
                raise SparkConfigError(msg)

    def _serve(self, checkpoint: Checkpoint) -> CheckpointServer:
        from producer.spark.fs_server import CheckpointServer  # noqa: PLC0415

        if self._server is None:
            self._server = CheckpointServer(
                checkpoint.fs,
                {
                    "checkpointLocation": checkpoint.location,
                    "transactional.id.prefix": self.prefix,
                },
            )
        return self._server

    def write_stream(
        self,
        df: DataFrame,
        fn: BatchFunction,
        *,
        trigger: Mapping[str, Any] | None = None,
        query_name: str | None = None,
        options: Mapping[str, str] | None = None,
    ) -> StreamingQuery:
        """Start the query: ``foreachBatch(self.wrap(fn))`` with this checkpoint.

        ``trigger`` is ``DataStreamWriter.trigger``'s keywords (e.g.
        ``{"processingTime": "1 second"}``); ``options`` other writer options.  A different
        ``checkpointLocation`` is refused before the query starts.
        """
        refuse_connect(df)
        checkpoint = self.open_checkpoint(df.sparkSession)
        for key, value in (options or {}).items():
            if key.lower() == "checkpointlocation" and str(value) not in (
                self.location,
                checkpoint.location,
            ):
                msg = (
                    f"write_stream: checkpointLocation {value!r} is not the ExactlyOnce "
                    f"checkpoint {self.location!r}: the source, the sink and Spark must "
                    "share one; set it once, on ExactlyOnce"
                )
                raise SparkConfigError(msg)
        missing = [c for c in RECEIPT_COLUMNS if c not in df.columns]
        if missing and _reads_kafka_share(df):
            msg = (
                "write_stream: the stream reads the kafka-share source but dropped its "
                f"receipt columns {missing}: pass the stream of read_stream (transform the "
                "batch inside the function, not the stream)"
            )
            raise SparkConfigError(msg)
        if missing:
            # Another source (Spark's Kafka source, files): nobody else recovers the
            # transactions a crashed run of this query left prepared; do it before start.
            self._recovered.clear()
            self._recover_at_start(checkpoint)
        writer = df.writeStream.foreachBatch(self._wrap(fn, df.sparkSession))
        for key, value in (options or {}).items():
            if key.lower() != "checkpointlocation":
                writer = writer.option(key, value)
        writer = writer.option("checkpointLocation", self.location)
        if query_name is not None:
            writer = writer.queryName(query_name)
        if trigger:
            writer = writer.trigger(**trigger)
        query = _ExactlyOnceQuery(writer.start()._jsq, self)  # noqa: SLF001
        self._query = query
        return query

    # -- the foreachBatch wrapper ----------------------------------------------------------

    def wrap(self, fn: BatchFunction) -> BatchFunction:
        """The function to pass to ``foreachBatch``: ``fn(df, batch_id)`` inside 2PC.

        Starts the committer (and the progress listener, on the active session), which
        commits every batch Spark decides within seconds.
        """
        return self._wrap(fn, SparkSession.getActiveSession())

    def _wrap(self, fn: BatchFunction, active: SparkSession | None) -> BatchFunction:
        if active is not None:
            self._check_session(active)  # fail before the query starts
            checkpoint = self.open_checkpoint(active)
            last = checkpoint.last_planned_batch()
            if last >= 0 and checkpoint.planned_ticket(last) is None:
                # A restart of a query without the kafka-share source: recover now, not
                # only at the first batch (there may be no new input for a while).
                self._recovered.clear()
                self._recover_at_start(checkpoint)
            self._session = active
            self._query = None  # a new query (write_stream sets it once started)
            self._install_listener(active)
            if self._committer is not None and not self._committer.running:
                self._committer = None  # a new query: a new committer (and no old error)
            self._start_committer(checkpoint)

        def run(df: DataFrame, batch_id: int) -> None:
            self._run_batch(fn, df, batch_id)

        run.__name__ = getattr(fn, "__name__", "run")
        run.__doc__ = fn.__doc__
        return run

    def _run_batch(self, fn: BatchFunction, df: DataFrame, batch_id: int) -> None:
        spark = df.sparkSession
        self._check_session(spark)
        self._raise_commit_error()
        checkpoint = self.open_checkpoint(spark)
        if not checkpoint.is_planned(batch_id):
            msg = (
                f"batch {batch_id} is not in {checkpoint.path('offsets')}: "
                "checkpoint_location must be the query's checkpointLocation"
            )
            raise SparkConfigError(msg)
        share_source = checkpoint.planned_ticket(batch_id) is not None
        missing = [c for c in RECEIPT_COLUMNS if c not in df.columns]
        if share_source and missing:
            msg = (
                "ExactlyOnce: this query reads the kafka-share source but the batch "
                f"DataFrame lacks its receipt columns (missing {missing}); wrap the function "
                "given to foreachBatch, not a function of a transformed stream that dropped "
                "them"
            )
            raise SparkConfigError(msg)
        query_id = checkpoint.query_id()
        self._start_committer(checkpoint, query_id)
        if not share_source:
            self._recover_at_start(checkpoint, query_id)
        self.commit_decided()
        # The receipts and the writes must see the same rows of the kafka-share source;
        # another source's batch is its stored offsets' records, re-read if used twice.
        cached = df.persist() if share_source else df
        state = _Batch(batch_id, query_id)
        t0 = time.monotonic()
        try:
            reads = self._receipts(cached, batch_id, query_id) if share_source else []
            state.reads.extend(reads)
            t1 = time.monotonic()
            self._current.batch = state
            try:
                fn(cached, batch_id)
            finally:
                self._current.batch = None
            t2 = time.monotonic()
            transactions = [*reads, *state.writes]
            if not transactions:
                return  # an empty batch: nothing read, nothing written, nothing to decide
            self._verify(transactions, batch_id)
            t3 = time.monotonic()
            write_intent(
                checkpoint.location,
                Intent(
                    batch=batch_id,
                    transactions=tuple(transactions),
                    query_id=query_id,
                    transactional_id_prefix=self.prefix,
                    written_at_ms=int(time.time() * 1000),
                ),
                checkpoint.fs,
            )
            # A re-run of N after an abort: only now may the new intent stop looking
            # resolved (a crash before this leaves it resolved, so recovery aborts it).
            checkpoint.fs.delete(checkpoint.path(RESOLVED_DIR, str(batch_id)))
            self.last_timings = {
                "read_s": t1 - t0,
                "write_s": t2 - t1,
                "verify_s": t3 - t2,
                "intent_s": time.monotonic() - t3,
            }
            log.info("batch %d prepared: %s", batch_id, self.last_timings)
        except BaseException:
            # No intent exists for this attempt: aborting what it prepared is always safe
            # and frees the input records and the output partitions now, not at restart.
            self._abort_quietly([*state.reads, *state.writes])
            raise
        finally:
            if share_source:
                cached.unpersist()

    def _recover_at_start(self, checkpoint: Checkpoint, query_id: str | None = None) -> None:
        """Once per query run: the start-up recovery the kafka-share source would run.

        Commits the batches Spark decided (``commits/N``) and aborts every other
        transaction of the query's prefix: undecided intents and the write transactions
        of a batch that died before its intent.  A decided batch the cluster aborted
        meanwhile fails the query with ``DecidedBatchAbortedError``.
        """
        if query_id is None:
            if not checkpoint.fs.exists(checkpoint.path("metadata")):
                return  # a new query: nothing can be left open
            query_id = checkpoint.query_id()
        if query_id in self._recovered:
            return
        view = checkpoint.view()
        prefixes = {self.prefix} | {
            i.transactional_id_prefix for i in view.intents.values() if i.transactional_id_prefix
        }
        report = recover(checkpoint, self.conn, prefixes, by=f"ExactlyOnce {query_id}")
        if report.committed or report.aborted:
            log.warning(
                "ExactlyOnce recovery of query %s: %d transaction(s) committed, %d aborted "
                "(batches %s)",
                query_id,
                report.committed,
                report.aborted,
                list(report.batches),
            )
        self._recovered.add(query_id)

    def _receipts(self, cached: DataFrame, batch_id: int, query_id: str) -> list[IntentTransaction]:
        """Every read transaction of the batch, from the input rows."""
        # A JVM-side distinct: no Python worker; the first action on ``cached`` (the read).
        rows = [tuple(r) for r in cached.select(*RECEIPT_COLUMNS).distinct().collect()]
        own = query_prefix(self.prefix, query_id)
        reads: dict[str, IntentTransaction] = {}
        for batch, tid, pid, epoch in rows:
            if int(batch) != batch_id:
                msg = (
                    f"rows of batch {batch} in Spark batch {batch_id}: the source's "
                    "checkpointLocation is not this query's"
                )
                raise SparkConfigError(msg)
            if tid is None:
                continue  # a deliverySemantics=at-least-once batch: no read transaction
            if not str(tid).startswith(own):
                msg = (
                    f"read transaction {tid} does not start with {own!r}: the sink's "
                    "transactional_id_prefix must equal the source's transactional.id.prefix"
                )
                raise SparkConfigError(msg)
            reads[str(tid)] = IntentTransaction(str(tid), int(pid), int(epoch), "r")
        return list(reads.values())

    def _abort_quietly(self, transactions: list[IntentTransaction]) -> None:
        for t in transactions:
            try:
                producer = TransactionalProducer.resume(
                    t.transactional_id, t.producer_id, t.epoch, self.conn.producer_config()
                )
            except Exception as exc:
                log.info("not aborting %s: %s", t.transactional_id, exc)
                continue
            try:
                producer.abort_transaction()
            except Exception as exc:
                log.warning("aborting %s failed (recovery will): %s", t.transactional_id, exc)
            finally:
                producer.close()

    def write(
        self,
        df: DataFrame,
        topic: str,
        *,
        key_col: str | None = None,
        value_col: str = "value",
    ) -> int:
        """Write ``df`` to ``topic``, one prepared transaction per Spark partition.

        Call it inside the function given to ``wrap``; returns the records written.
        """
        state: _Batch | None = getattr(self._current, "batch", None)
        if state is None:
            msg = "ExactlyOnce.write must be called inside the function passed to eos.wrap(...)"
            raise SparkConfigError(msg)
        for col in (key_col, value_col):
            if col is not None and col not in df.columns:
                msg = f"ExactlyOnce.write: no column {col!r} in {df.columns}"
                raise SparkConfigError(msg)
        projected = df.select(
            (df[key_col] if key_col is not None else functions.lit(None)).alias("k"),
            df[value_col].alias("v"),
        )
        task = WriteTask(
            self.conn,
            self.producer_config,
            self.prefix,
            state.query_id,
            state.batch,
            state.partitions_used,
            topic,
        )
        state.partitions_used += projected.rdd.getNumPartitions()
        written = 0
        for tid, pid, epoch, sent in prepare_writes(projected, task):
            state.writes.append(IntentTransaction(tid, pid, epoch, "w"))
            written += sent
        state.records_written += written
        return written

    # -- checks ------------------------------------------------------------------------------

    def _check_session(self, spark: SparkSession) -> None:
        refuse_connect(spark)
        speculation = spark.sparkContext.getConf().get("spark.speculation", "false")
        if str(speculation).strip().lower() == "true":
            msg = (
                "spark.speculation is on: a speculative copy of a task would fence the "
                "transaction of the original; set spark.speculation=false for exactly-once"
            )
            raise SparkConfigError(msg)

    def _verify(self, transactions: list[IntentTransaction], batch: int) -> None:
        """Every prepared transaction must still be open with the recorded producer epoch."""
        with Admin({**self.conn.producer_config(), "client.id": "sharetxn-spark-sink"}) as admin:
            fenced = fenced_transaction(admin, transactions)
        if fenced is not None:
            t, now = fenced
            msg = (
                f"batch {batch}: prepared transaction {t.transactional_id} "
                f"({t.producer_id}, {t.epoch}) is now {now}: a re-run or retried task "
                "fenced it; the batch fails and is aborted and re-run on restart"
            )
            raise BatchFencedError(msg)

    # -- the commit phase ---------------------------------------------------------------------

    def commit_decided(self) -> list[int]:
        """Commit every batch Spark has decided (``commits/N``); idempotent."""
        done = commit_decided(self.checkpoint, self.conn, by="ExactlyOnce sink")
        self.batches_committed += len(done)
        return done

    @property
    def commit_lag(self) -> CommitLag:
        """Seconds from ``commits/N`` to batch N committed (``p50``, ``p99``, ``by_batch``)."""
        return self._commit_lag

    @property
    def commit_error(self) -> BaseException | None:
        """Why the committer gave up (and stopped the query), or None."""
        return self._committer.error if self._committer is not None else None

    def _raise_commit_error(self) -> None:
        error = self.commit_error
        if error is not None:
            raise error

    def _start_committer(self, checkpoint: Checkpoint, query_id: str | None = None) -> None:
        """The committer of this checkpoint runs (started again for a new query)."""
        if query_id is not None and self._query is None:
            self._query = self._find_query(query_id)
        committer = self._committer
        if committer is not None and (committer.running or committer.error is not None):
            return
        self._committer = Committer(
            checkpoint,
            self.commit_decided,
            on_fatal=self._commit_failed,
            alive=self._query_active,
            query_id=self._query_id,
            poll_s=self.commit_poll_s,
            failure_timeout_s=self.commit_failure_timeout_s,
            lag=self._commit_lag,
        )
        self._committer.start()

    def _find_query(self, query_id: str) -> StreamingQuery | None:
        """The running query of ``foreachBatch(eos.wrap(fn))``, through the starting session."""
        if self._session is None:
            return None
        try:
            return next((q for q in self._session.streams.active if q.id == query_id), None)
        except Exception:  # the session is going away
            return None

    def _query_active(self) -> bool:
        query = self._query
        return query is None or bool(query.isActive)

    def _query_id(self) -> str | None:
        query = self._query
        try:
            return str(query.id) if query is not None else None
        except Exception:
            return None

    def _commit_failed(self, error: BaseException) -> None:
        """The committer gave up: stop the query; its ``awaitTermination`` raises ``error``."""
        query = self._query
        if query is None and self._checkpoint is not None:
            try:
                query = self._find_query(self._checkpoint.query_id())
            except Exception:
                query = None
        if query is not None:
            log.error("stopping query %s: %s", query.id, error)
            query.stop()

    def _install_listener(self, spark: SparkSession) -> None:
        """The progress listener, on the session that starts the query.

        Spark delivers a query's events only to the listeners of the session that started
        it, not to those of the clone a batch runs in (``df.sparkSession``).
        """
        if self._listener is None:
            self._listener = _CommitListener(self)
            spark.streams.addListener(self._listener)

    def await_termination(self, query: StreamingQuery, timeout_s: float | None = None) -> bool:
        """``query.awaitTermination`` that then commits the last decided batch.

        The committer commits every decided batch within seconds while the driver runs;
        this (or ``close``) also commits it before a driver exits right after the query
        stopped.  Raises the committer's error if it stopped the query.  Returns whether
        the query terminated.
        """
        if timeout_s is None:
            query.awaitTermination()
            done = True
        else:
            done = bool(query.awaitTermination(max(1, round(timeout_s))))
        if done:
            self._raise_commit_error()
            self.commit_decided()
        return done

    def close(self, spark: SparkSession | None = None) -> None:
        """Commit what is decided, stop the committer and remove the progress listener."""
        if self._committer is not None:
            self._committer.stop()
        self.commit_decided()
        if self._listener is not None:
            session = spark or self._session
            if session is not None:
                session.streams.removeListener(self._listener)
            self._listener = None
        if self._server is not None:
            self._server.close()
            self._server = None


class _ExactlyOnceQuery(StreamingQuery):
    """The query of ``write_stream``: ``awaitTermination`` raises the committer's error."""

    def __init__(self, jsq: Any, sink: ExactlyOnce) -> None:
        super().__init__(jsq)
        self._sink = sink

    def awaitTermination(self, timeout: int | None = None) -> bool | None:
        done = super().awaitTermination(timeout)
        if done is not False:
            self._sink._raise_commit_error()  # noqa: SLF001
        return done


def _reads_kafka_share(df: DataFrame) -> bool:
    """Whether the streaming plan of ``df`` has a kafka-share source (False if unknown)."""
    try:
        plan = str(df._jdf.queryExecution().logical().toString())  # noqa: SLF001
    except Exception:  # not a JVM-backed DataFrame: the batch check decides later
        return False
    return any(
        "StreamingRelation" in line and ", kafka-share," in line for line in plan.splitlines()
    )


class _CommitListener(StreamingQueryListener):
    """Wakes the committer when Spark reports a batch's progress (after ``commits/N``).

    The committer does the work (and polls on its own): a listener thread that blocks or
    fails would not be noticed by anyone.
    """

    def __init__(self, sink: ExactlyOnce) -> None:
        self.sink = sink

    def _wake(self) -> None:
        committer = self.sink._committer  # noqa: SLF001
        if committer is not None:
            committer.wake()

    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        pass

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        self._wake()

    def onQueryIdle(self, event: QueryIdleEvent) -> None:
        self._wake()

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        committer = self.sink._committer  # noqa: SLF001
        if committer is not None:
            committer.tick()  # the last decided batch, before a driver exits
