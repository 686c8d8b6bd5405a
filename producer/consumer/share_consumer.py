"""The share consumer (KIP-932) with implicit, explicit and transactional acknowledgement.

``ShareConsumer(config)`` joins a share group with ShareGroupHeartbeat from a
background thread, opens one share session per leader broker and fetches with
ShareFetch, decoding the RecordBatch v2 bytes itself (``producer.protocol.records``).
Only records inside the acquired ranges are returned; acquired offsets with no data record
(control batches, compacted or aborted records) are acknowledged as GAP, as Kafka's client.

``share.acknowledgement.mode``:

``implicit`` (default)
    every record returned by a poll is accepted by the next ``poll``,
    ``commit_sync`` or ``close``;
``explicit``
    the application calls ``acknowledge(record, type)`` for every record of a
    poll before the next poll (else ``IllegalStateError``, as Kafka);
    acknowledgements ride on the next ShareFetch or go out with
    ``commit_sync`` (ShareAcknowledge);
``transactional`` (KIP-1289)
    ``acknowledge`` only records; nothing is sent to the broker for them.
    ``acknowledgements()`` returns the recorded ones (and clears them) for
    ``TransactionalProducer.send_share_acks_to_transaction``; until then the
    records stay acquired by this member (their locks keep running).

Wire behaviour follows librdkafka's ShareConsumer: a client-made 22-character
member id, heartbeat epoch 0 with the topic names to join, ShareFetch at
session epoch 0 with every assigned partition then epochs 1, 2, ... carrying
only added/forgotten partitions and the pending acknowledgements, and on close
ShareAcknowledge at epoch -1 (closing the session releases whatever is still
acquired) followed by the heartbeat at epoch -1 that leaves the group.

The public methods are for one thread at a time (``ConcurrentAccessError`` otherwise, like
Kafka's ``ConcurrentModificationException``); ``close`` may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Final

from producer.consumer.share_consumer_config import (
    ACQUIRE_MODES,
    DEFAULTS,
    MODES,
    ShareConsumerConfig,
    new_member_id,
)
from producer.consumer.share_inflight import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    InFlight,
    Outgoing,
    PendingAck,
    Session,
    ack_ranges,
    decode_acquired,
    fetch_topics,
    outside,
    partition_error,
    wire_batches,
)
from producer.consumer.share_membership import Membership, ms_of
from producer.protocol.types import (
    AcknowledgeType,
    Record,
    ShareAckBatch,
    ShareAcknowledgements,
    ShareGroupMetadata,
)
from txn.api_keys import ApiKey
from txn.errors import (
    ClosedError,
    ErrorCode,
    IllegalStateError,
    RetriableError,
    SharetxnError,
    error_for_code,
)
from txn.ids import TopicIdPartition, TopicPartition

__all__ = [
    "DEFAULTS",
    "MODES",
    "ConcurrentAccessError",
    "IllegalStateError",
    "ShareConsumer",
    "ShareConsumerConfig",
    "ack_ranges",
    "new_member_id",
]

log = logging.getLogger("producer.share_consumer")


_SESSION_ERRORS: Final = frozenset(
    {ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH}
)
_USER_ACK_TYPES: Final = frozenset(
    {AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT}
)
_CLOSE_TIMEOUT_S: Final = 30.0


class ConcurrentAccessError(SharetxnError):
    """Two threads used the consumer at once (Kafka's ConcurrentModificationException)."""


# -- the consumer ----------------------------------------------------------------------------------


class ShareConsumer:
    """A KIP-932 share-group consumer; see the module docstring for the three modes."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._cfg = ShareConsumerConfig.parse(config)
        self._mode = self._cfg.mode
        self._client = self._cfg.new_client()
        self._membership = Membership(self._cfg, new_member_id())
        self._subscription: tuple[str, ...] = ()
        self._sessions: dict[int, Session] = {}
        self._inflight: dict[TopicPartition, InFlight] = {}
        self._topic_names: dict[uuid.UUID, str] = {}
        self._results: dict[TopicPartition, Exception | None] = {}
        self._deferred_error: Exception | None = None
        self._metadata_stale = False
        self._lock_timeout_ms: int | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._turn = 0  # record_limit: the next node to acquire from
        # single-thread use, close from anywhere
        self._guard = threading.Condition(threading.Lock())
        self._owner: int | None = None
        self._depth = 0
        self._close_lock = threading.Lock()
        self._closing = threading.Event()
        self._closed = False
        # transactional mode: the cluster must serve KIP-1289, checked before any record is read
        self._kip1289_checked = self._mode != "transactional"

    # -- context manager --------------------------------------------------------------------------

    def __enter__(self) -> ShareConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- properties -------------------------------------------------------------------------------

    @property
    def acknowledgement_mode(self) -> str:
        return self._mode

    @property
    def acquire_mode(self) -> str:
        """``share.acquire.mode``: "batch_optimized" or "record_limit"."""
        return self._cfg.acquire_mode

    @property
    def member_id(self) -> str:
        return self._membership.member_id

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        """The record lock duration the broker reported with the last ShareFetch, if any."""
        return self._lock_timeout_ms

    def group_metadata(self) -> ShareGroupMetadata:
        """Group id, member id and member epoch, for ``send_share_acks_to_transaction``."""
        return self._membership.metadata()

    def subscription(self) -> set[str]:
        return set(self._subscription)

    def assignment(self) -> set[TopicPartition]:
        """The partitions assigned so far (not in Kafka's ShareConsumer; a new member's
        come with a heartbeat, one heartbeat interval late in Kafka 4.4 at worst)."""
        return set(self._membership.snapshot()[1])

    # -- single-thread guard ----------------------------------------------------------------------

    @contextmanager
    def _use(self, name: str) -> Iterator[None]:
        me = threading.get_ident()
        with self._guard:
            if self._owner is not None and self._owner != me:
                msg = (
                    f"ShareConsumer is not safe for multi-threaded access: {name}() was called "
                    "while another thread is using the consumer"
                )
                raise ConcurrentAccessError(msg)
            self._owner = me
            self._depth += 1
        try:
            if self._closed or self._closing.is_set():
                msg = "the ShareConsumer is closed"
                raise ClosedError(msg)
            yield
        finally:
            with self._guard:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
                    self._guard.notify_all()

    # -- subscription -----------------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        """Join the share group for these topics (an empty list unsubscribes)."""
        if isinstance(topics, str):
            msg = "subscribe() takes a list of topic names, not a string"
            raise TypeError(msg)
        names = list(topics)
        for name in names:
            if not isinstance(name, str) or not name.strip():
                msg = f"invalid topic name {name!r}"
                raise ValueError(msg)
        if not names:
            self.unsubscribe()
            return
        with self._use("subscribe"):
            self._check_kip1289()
            self._subscription = tuple(sorted(set(names)))
            self._membership.subscribe(self._subscription)

    def unsubscribe(self) -> None:
        """Send pending acknowledgements, close the share sessions and leave the group."""
        with self._use("unsubscribe"):
            if not self._subscription and not self._sessions:
                return
            self._finish_sessions(time.monotonic() + self._cfg.request_timeout_ms / 1000)
            self._membership.leave()
            self._subscription = ()
            for inflight in self._inflight.values():
                inflight.delivered.clear()

    # -- poll -------------------------------------------------------------------------------------

    def poll(self, timeout_s: float = 0.0) -> list[Record]:
        """Records acquired for this member; waits up to ``timeout_s`` seconds for some."""
        with self._use("poll"):
            self._raise_deferred()
            self._settle_previous_poll()
            if not self._subscription:
                msg = "Consumer is not subscribed to any topics."
                raise IllegalStateError(msg)
            if not self._check_kip1289():
                # Cluster unreachable: nothing can be acquired yet, as when not yet assigned.
                wait_s = min(max(0.0, float(timeout_s)), self._cfg.retry_backoff_ms / 1000)
                self._closing.wait(wait_s)
                return []
            deadline = time.monotonic() + max(0.0, float(timeout_s))
            while True:
                self._raise_fatal()
                if self._closing.is_set():
                    return []
                version, assignment = self._membership.snapshot()
                for tp, topic_id in assignment.items():
                    self._topic_names[topic_id] = tp.topic
                records, worked = self._fetch_round(assignment, deadline)
                if records:
                    return records
                self._raise_deferred()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                if worked:
                    continue
                if assignment:
                    # Assigned, but no leader known yet: back off, then look again.
                    self._closing.wait(min(remaining, self._cfg.retry_backoff_ms / 1000))
                else:
                    # Not assigned anything yet: wait for the heartbeat thread.
                    self._membership.wait_for_change(version, remaining, self._closing)

    def _check_kip1289(self) -> bool:
        """Transactional mode refuses a cluster without KIP-1289 before acquiring records.

        Acquired records could not be acknowledged there at all (``Kip1289NotSupportedError``
        names the missing API).  An unreachable cluster defers the check (False): ``poll``
        makes it before its first fetch.
        """
        if self._kip1289_checked:
            return True
        try:
            self._client.require_kip1289(ApiKey.TXN_SHARE_ACKNOWLEDGE)
            self._client.require_kip1289(ApiKey.ADD_SHARE_ACKS_TO_TXN)
        except RetriableError:
            return False
        self._kip1289_checked = True
        return True

    def _raise_fatal(self) -> None:
        fatal = self._membership.fatal
        if fatal is not None:
            raise fatal

    def _raise_deferred(self) -> None:
        error, self._deferred_error = self._deferred_error, None
        if error is not None:
            raise error

    def _settle_previous_poll(self) -> None:
        if self._mode == "implicit":
            self._accept_delivered()
            return
        unacked = sum(len(i.delivered) for i in self._inflight.values())
        if unacked:
            if self._mode == "explicit":
                msg = "All records must be acknowledged in explicit acknowledgement mode."
            else:
                msg = (
                    "All records must be acknowledged in transactional acknowledgement mode "
                    f"before the next poll ({unacked} of the previous poll are not)."
                )
            raise IllegalStateError(msg)

    def _accept_delivered(self) -> None:
        for inflight in self._inflight.values():
            for offset, d in inflight.delivered.items():
                inflight.acks[offset] = PendingAck(AcknowledgeType.ACCEPT, d.node_id, d.generation)
            inflight.delivered.clear()

    # -- acknowledgements -------------------------------------------------------------------------

    def acknowledge(self, record: Record, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Acknowledge one record of the last poll (explicit and transactional modes)."""
        with self._use("acknowledge"):
            if self._mode == "implicit":
                msg = (
                    "acknowledge() needs share.acknowledgement.mode=explicit or transactional; "
                    "in implicit mode the next poll accepts every record"
                )
                raise IllegalStateError(msg)
            try:
                ack_type = AcknowledgeType(int(type))
            except ValueError:
                msg = f"unknown acknowledge type {type!r}"
                raise ValueError(msg) from None
            if ack_type not in _USER_ACK_TYPES:
                msg = f"a record takes ACCEPT, RELEASE or REJECT, not {ack_type.name}"
                raise ValueError(msg)
            inflight = self._inflight.get(record.topic_partition)
            delivery = inflight.delivered.get(record.offset) if inflight is not None else None
            if inflight is None or delivery is None:
                msg = (
                    f"record {record.topic}-{record.partition}@{record.offset} cannot be "
                    "acknowledged: it was not returned by the last poll or is acknowledged already"
                )
                raise IllegalStateError(msg)
            if record.delivery_count != delivery.delivery_count:
                msg = (
                    f"record {record.topic}-{record.partition}@{record.offset} is from delivery "
                    f"{record.delivery_count}, the in-flight one is delivery "
                    f"{delivery.delivery_count}"
                )
                raise IllegalStateError(msg)
            del inflight.delivered[record.offset]
            inflight.acks[record.offset] = PendingAck(
                ack_type, delivery.node_id, delivery.generation
            )

    def acknowledge_delivered(self) -> int:
        """ACCEPT every record of the last poll not acknowledged yet; returns how many.

        What ``acknowledge(record)`` for each of them does (explicit and transactional
        modes), in one step: for consumers that take whole polls, such as a read task that
        stages a poll's acknowledgements in its transaction.
        """
        with self._use("acknowledge"):
            if self._mode == "implicit":
                msg = "acknowledge_delivered() needs explicit or transactional mode"
                raise IllegalStateError(msg)
            count = 0
            for inflight in self._inflight.values():
                for offset, d in inflight.delivered.items():
                    inflight.acks[offset] = PendingAck(
                        AcknowledgeType.ACCEPT, d.node_id, d.generation
                    )
                count += len(inflight.delivered)
                inflight.delivered.clear()
            return count

    def acknowledgements(self) -> ShareAcknowledgements:
        """The recorded acknowledgements (transactional mode), cleared from the consumer.

        Hand them to ``TransactionalProducer.send_share_acks_to_transaction`` together with
        ``group_metadata()``.  Besides the application's acknowledgements they hold the GAP
        acknowledgements of acquired offsets that had no data record and the REJECT/RELEASE
        of batches the consumer could not decode.
        """
        with self._use("acknowledgements"):
            if self._mode != "transactional":
                msg = "acknowledgements() needs share.acknowledgement.mode=transactional"
                raise IllegalStateError(msg)
            batches: dict[TopicPartition, tuple[ShareAckBatch, ...]] = {}
            for tp, inflight in sorted(self._inflight.items()):
                if inflight.acks:
                    batches[tp] = tuple(
                        ack_ranges((o, a.ack_type) for o, a in inflight.acks.items())
                    )
                    inflight.acks.clear()
            meta = self._membership.metadata()
            return ShareAcknowledgements(meta.group_id, meta.member_id, batches)

    def commit_sync(self, timeout_s: float | None = None) -> dict[TopicPartition, Exception | None]:
        """Send the pending acknowledgements now (ShareAcknowledge) and wait for the outcome.

        Returns, per partition, ``None`` or the exception of every acknowledgement sent since
        the previous ``commit_sync`` (including those that rode on a ShareFetch, and those that
        could not be delivered because their share session was lost).
        """
        with self._use("commit_sync"):
            if self._mode == "transactional":
                msg = (
                    "commit_sync() is not used in transactional mode: pass acknowledgements() "
                    "to TransactionalProducer.send_share_acks_to_transaction"
                )
                raise IllegalStateError(msg)
            if self._mode == "implicit":
                self._accept_delivered()
            timeout_ms = self._cfg.request_timeout_ms if timeout_s is None else timeout_s * 1000
            self._send_acknowledgements(time.monotonic() + max(timeout_ms, 0) / 1000, final=False)
            results, self._results = self._results, {}
            return results

    def commit_async(self) -> None:
        """Queue the pending acknowledgements for the next ShareFetch or ``commit_sync``.

        Their outcome is reported by the next ``commit_sync``.
        """
        with self._use("commit_async"):
            if self._mode == "transactional":
                msg = "commit_async() is not used in transactional mode"
                raise IllegalStateError(msg)
            if self._mode == "implicit":
                self._accept_delivered()

    def _record_result(self, tp: TopicPartition, error: Exception | None) -> None:
        if error is not None or tp not in self._results:
            self._results[tp] = error
        elif self._results.get(tp) is None:
            self._results[tp] = None

    def _record_ack_result(self, tp: TopicPartition, error_code: int, message: str | None) -> None:
        """One partition's acknowledgement outcome: applied (NONE) or the error it names."""
        error = (
            None
            if error_code == ErrorCode.NONE
            else error_for_code(error_code)(message, topic=tp.topic, partition=tp.partition)
        )
        self._record_result(tp, error)

    def _fail_acks(
        self, acks: Mapping[TopicPartition, list[tuple[int, AcknowledgeType]]], error: Exception
    ) -> None:
        for tp, offsets in acks.items():
            if offsets:
                self._record_result(tp, error)

    def _take_acks(
        self,
        session: Session,
        keep: Callable[[TopicPartition, uuid.UUID], bool] | None = None,
    ) -> dict[TopicPartition, list[tuple[int, AcknowledgeType]]]:
        """Remove and return the pending acknowledgements for records from ``session``.

        ``keep`` limits which partitions are taken.  Acknowledgements of records acquired
        through an earlier, lost session of the node cannot succeed any more: they are all
        taken and failed (reported by ``commit_sync``) instead of sent.
        """
        out: dict[TopicPartition, list[tuple[int, AcknowledgeType]]] = {}
        if self._mode == "transactional":
            # Recorded acks reach the broker only inside a transaction: never piggyback
            # them on a ShareFetch (a second poll before send_share_acks_to_transaction).
            return out
        stale: dict[TopicPartition, list[tuple[int, AcknowledgeType]]] = {}
        for tp, inflight in self._inflight.items():
            wanted = keep is None or keep(tp, inflight.topic_id)
            mine = [(o, a) for o, a in inflight.acks.items() if a.node_id == session.node_id]
            for offset, ack in mine:
                if ack.generation == session.generation and session.epoch > INITIAL_EPOCH:
                    if wanted:
                        del inflight.acks[offset]
                        out.setdefault(tp, []).append((offset, ack.ack_type))
                else:
                    del inflight.acks[offset]
                    stale.setdefault(tp, []).append((offset, ack.ack_type))
        if stale:
            count = sum(len(v) for v in stale.values())
            log.warning(
                "share group %s: %d acknowledgement(s) for records from a lost share session "
                "with node %d were dropped; the broker released those records",
                self._cfg.group_id,
                count,
                session.node_id,
            )
            error = error_for_code(int(ErrorCode.SHARE_SESSION_NOT_FOUND))(
                "the share session that acquired these records was lost",
                node_id=session.node_id,
            )
            self._fail_acks(stale, error)
        return out

    def _reset_session(self, session: Session, reason: Exception) -> None:
        if session.epoch != INITIAL_EPOCH:
            log.warning(
                "share group %s: share session with node %d reset (%s); records it acquired "
                "are released by the broker and their pending acknowledgements fail",
                self._cfg.group_id,
                session.node_id,
                reason,
            )
        session.epoch = INITIAL_EPOCH
        session.generation += 1
        session.partitions.clear()

    # -- fetching ---------------------------------------------------------------------------------

    def _leaders(
        self, assignment: Mapping[TopicPartition, uuid.UUID]
    ) -> dict[int, set[TopicIdPartition]]:
        if self._metadata_stale and assignment:
            self._metadata_stale = False
            try:
                self._client.refresh_metadata(sorted({tp.topic for tp in assignment}))
            except SharetxnError as exc:
                log.debug("metadata refresh failed: %s", exc)
                self._metadata_stale = True
        out: dict[int, set[TopicIdPartition]] = {}
        for tp, topic_id in assignment.items():
            try:
                node = self._client.leader_for(tp)
            except SharetxnError as exc:
                log.debug("no leader for %s yet: %s", tp, exc)
                self._metadata_stale = True
                continue
            out.setdefault(node, set()).add(TopicIdPartition(topic_id, tp.partition))
        return out

    def _fetch_round(
        self, assignment: Mapping[TopicPartition, uuid.UUID], deadline: float
    ) -> tuple[list[Record], bool]:
        """One ShareFetch per node with work; returns the records and whether anything was sent."""
        desired = self._leaders(assignment)
        only = None  # record_limit (KIP-1206): one node acquires a round, at most max.poll.records
        if self._cfg.record_limit and len(desired) > 1:
            only = sorted(desired)[self._turn % len(desired)]
            self._turn += 1
            desired = {only: desired[only]}  # the others' acks go in a ShareAcknowledge below
        nodes = set(desired)
        for node, s in self._sessions.items():
            if s.epoch > INITIAL_EPOCH and (s.partitions or self._has_acks(node)):
                nodes.add(node)
        if not nodes:
            return [], False
        # A partition named in a ShareFetch joins the session, so acknowledgements for records of
        # partitions this node no longer serves us go in a ShareAcknowledge first.
        side: list[Outgoing] = []
        for node in sorted(nodes):
            session = self._sessions.setdefault(node, Session(node))
            if session.epoch > INITIAL_EPOCH:
                want = desired.get(node, set())
                stray = self._take_acks(session, outside(want))
                if stray:
                    side.append(self._ack_request(session, stray, final=False))
        if side:
            for ack_req, resp in zip(
                side, self._exchange_all(side, ApiKey.SHARE_ACKNOWLEDGE), strict=True
            ):
                self._on_acknowledge_response(ack_req, resp, final=False)
        remaining_ms = max(0, int((deadline - time.monotonic()) * 1000))
        max_wait = min(self._cfg.fetch_max_wait_ms, remaining_ms)
        outgoing: list[Outgoing] = []
        for node in sorted(nodes if only is None else {only}):
            session = self._sessions.setdefault(node, Session(node))
            fetch = self._build_fetch(session, desired.get(node, set()), max_wait)
            if fetch is not None:
                outgoing.append(fetch)
        if not outgoing:
            return [], False
        responses = self._exchange_all(outgoing, ApiKey.SHARE_FETCH)
        records: list[Record] = []
        backoff = False
        for out, resp in zip(outgoing, responses, strict=True):
            got, retry = self._on_fetch_response(out, resp)
            records.extend(got)
            backoff = backoff or retry
        if backoff and not records:
            self._closing.wait(
                min(self._cfg.retry_backoff_ms / 1000, max(0.0, deadline - time.monotonic()))
            )
        return records, True

    def _has_acks(self, node: int) -> bool:
        if self._mode == "transactional":
            return False  # only a transaction sends them
        return any(
            a.node_id == node
            for inflight in self._inflight.values()
            for a in inflight.acks.values()
        )

    def _build_fetch(
        self, session: Session, want: set[TopicIdPartition], max_wait_ms: int
    ) -> Outgoing | None:
        acks = self._take_acks(session)  # at epoch 0 only stale ones exist: failed, not sent
        if session.epoch == INITIAL_EPOCH:
            if not want:
                return None
            added = set(want)
            forgotten: set[TopicIdPartition] = set()
        else:
            if not want and not session.partitions and not acks:
                return None
            added = want - session.partitions
            forgotten = session.partitions - want
        topics, gone = fetch_topics(
            added, forgotten, acks, {tp: f.topic_id for tp, f in self._inflight.items()}
        )
        body: dict[str, Any] = {
            "group_id": self._cfg.group_id,
            "member_id": self._membership.member_id,
            "share_session_epoch": session.epoch,
            "max_wait": max_wait_ms if want else 0,
            "min_bytes": self._cfg.fetch_min_bytes,
            "max_bytes": self._cfg.fetch_max_bytes,
            "max_records": self._cfg.max_poll_records,
            "batch_size": self._cfg.max_poll_records,
            "share_acquire_mode": ACQUIRE_MODES[self._cfg.acquire_mode],
            "topics": topics,
            "forgotten_topics_data": gone,
        }
        return Outgoing(session, body, set(want), acks)

    def _exchange_all(self, outgoing: list[Outgoing], api_key: ApiKey) -> list[Any]:
        """Send one request per node (concurrently when there are several); exceptions returned."""

        # record_limit needs ShareFetch v2 (Kafka's client: "The v1 ShareFetch only supports
        # ShareAcquireMode.BATCH_OPTIMIZED"): an older broker fails the poll.
        low = 2 if api_key is ApiKey.SHARE_FETCH and self._cfg.record_limit else 1

        def one(out: Outgoing) -> Any:
            try:
                return self._client.send(out.session.node_id, api_key, out.body, min_version=low)
            except SharetxnError as exc:
                return exc

        if len(outgoing) == 1:
            return [one(outgoing[0])]
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=8, thread_name_prefix=f"sharetxn-share-fetch-{self.member_id}"
            )
        return list(self._executor.map(one, outgoing))

    def _on_fetch_response(self, out: Outgoing, resp: Any) -> tuple[list[Record], bool]:
        """Apply one ShareFetch response; returns its records and whether to back off."""
        session = out.session
        if isinstance(resp, Exception):
            # The connection is gone, and with it the broker's session and its acquired records.
            self._reset_session(session, resp)
            self._fail_acks(out.acks, resp)
            if isinstance(resp, RetriableError):
                self._metadata_stale = True
                return [], True
            raise resp
        code = ErrorCode(int(resp.error_code))
        if code is not ErrorCode.NONE:
            error = error_for_code(int(code))(
                resp.error_message, group_id=self._cfg.group_id, node_id=session.node_id
            )
            self._fail_acks(out.acks, error)
            if code in _SESSION_ERRORS:
                self._reset_session(session, error)
                return [], False
            if error.retriable or code is ErrorCode.SHARE_SESSION_LIMIT_REACHED:
                return [], True
            raise error
        if session.epoch == INITIAL_EPOCH:
            session.epoch = 1
        else:
            session.advance()
        session.partitions = set(out.want)
        self._lock_timeout_ms = ms_of(resp.acquisition_lock_timeout)
        acked = dict(out.acks)
        records: list[Record] = []
        problems: list[Exception] = []
        for topic in resp.responses:
            for p in topic.partitions:
                topic_id = topic.topic_id
                name = self._topic_names.get(topic_id) if topic_id is not None else None
                if name is None or topic_id is None:
                    continue
                tp = TopicPartition(name, int(p.partition_index))
                if tp in acked:
                    del acked[tp]
                    self._record_ack_result(
                        tp, int(p.acknowledge_error_code), p.acknowledge_error_message
                    )
                if int(p.error_code) != ErrorCode.NONE:
                    stale, problem = partition_error(tp, int(p.error_code), p.error_message)
                    self._metadata_stale |= stale
                    if problem is not None:
                        problems.append(problem)
                    continue
                if p.acquired_records:
                    inflight = self._inflight.get(tp)
                    if inflight is None or inflight.topic_id != topic_id:
                        inflight = self._inflight[tp] = InFlight(topic_id)
                    got, problem = decode_acquired(
                        tp, session, inflight, p, check_crcs=self._cfg.check_crcs
                    )
                    records.extend(got)
                    if problem is not None:
                        problems.append(problem)
        for tp in acked:
            self._record_result(tp, None)  # acknowledged partitions without an entry: applied
        if problems:
            if records:
                self._deferred_error = problems[0]
            else:
                raise problems[0]
        return records, False

    # -- sending acknowledgements and closing sessions --------------------------------------------

    def _send_acknowledgements(self, deadline: float, *, final: bool) -> None:
        """ShareAcknowledge to every node with pending acknowledgements (all sessions if final)."""
        outgoing: list[Outgoing] = []
        for _node, session in sorted(self._sessions.items()):
            if session.epoch == INITIAL_EPOCH:
                self._take_acks(session)  # nothing open: those can only fail
                continue
            acks = self._take_acks(session)
            if acks or final:
                outgoing.append(self._ack_request(session, acks, final=final))
        # Acknowledgements recorded for nodes we have no session with at all.
        for inflight_tp, inflight in self._inflight.items():
            orphans = [(o, a) for o, a in inflight.acks.items() if a.node_id not in self._sessions]
            if orphans:
                for o, _a in orphans:
                    del inflight.acks[o]
                self._record_result(
                    inflight_tp,
                    error_for_code(int(ErrorCode.SHARE_SESSION_NOT_FOUND))(
                        "no share session with the broker that delivered these records"
                    ),
                )
        if not outgoing:
            return
        if time.monotonic() > deadline:
            error = error_for_code(int(ErrorCode.REQUEST_TIMED_OUT))("commit timed out")
            for out in outgoing:
                self._fail_acks(out.acks, error)
            return
        for out, resp in zip(
            outgoing, self._exchange_all(outgoing, ApiKey.SHARE_ACKNOWLEDGE), strict=True
        ):
            self._on_acknowledge_response(out, resp, final=final)

    def _ack_request(
        self,
        session: Session,
        acks: dict[TopicPartition, list[tuple[int, AcknowledgeType]]],
        *,
        final: bool,
    ) -> Outgoing:
        by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for tp, offsets in sorted(acks.items()):
            by_topic.setdefault(self._inflight[tp].topic_id, []).append(
                {"partition_index": tp.partition, "acknowledgement_batches": wire_batches(offsets)}
            )
        body = {
            "group_id": self._cfg.group_id,
            "member_id": self._membership.member_id,
            "share_session_epoch": FINAL_EPOCH if final else session.epoch,
            "topics": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        return Outgoing(session, body, set(session.partitions), acks)

    def _on_acknowledge_response(self, out: Outgoing, resp: Any, *, final: bool) -> None:
        session = out.session
        if isinstance(resp, Exception):
            self._fail_acks(out.acks, resp)
            self._reset_session(session, resp)
            if final:
                self._sessions.pop(session.node_id, None)
            return
        code = ErrorCode(int(resp.error_code))
        if code is not ErrorCode.NONE:
            error = error_for_code(int(code))(
                resp.error_message, group_id=self._cfg.group_id, node_id=session.node_id
            )
            self._fail_acks(out.acks, error)
            if code in _SESSION_ERRORS or final:
                self._reset_session(session, error)
            if final:
                self._sessions.pop(session.node_id, None)
            return
        pending = dict(out.acks)
        for topic in resp.responses:
            name = self._topic_names.get(topic.topic_id) if topic.topic_id is not None else None
            if name is None:
                continue
            for p in topic.partitions:
                tp = TopicPartition(name, int(p.partition_index))
                if tp not in pending:
                    continue
                del pending[tp]
                self._record_ack_result(tp, int(p.error_code), p.error_message)
        for tp in pending:
            self._record_result(tp, None)
        if final:
            self._sessions.pop(session.node_id, None)
        else:
            session.advance()

    def _finish_sessions(self, deadline: float) -> None:
        """Final acknowledgements and session close (epoch -1) on every node."""
        if self._mode == "implicit":
            self._accept_delivered()
        elif self._mode == "transactional":
            recorded = sum(len(i.acks) for i in self._inflight.values())
            if recorded:
                log.warning(
                    "share group %s: %d recorded acknowledgement(s) were never handed to a "
                    "transaction; closing the share session releases their records",
                    self._cfg.group_id,
                    recorded,
                )
            for inflight in self._inflight.values():
                inflight.acks.clear()
        self._send_acknowledgements(deadline, final=True)
        self._sessions.clear()
        for inflight in self._inflight.values():
            inflight.delivered.clear()

    # -- close ------------------------------------------------------------------------------------

    def close(self, timeout_s: float | None = None) -> None:
        """Send the last acknowledgements, close the share sessions and leave the group.

        Idempotent, and safe to call from any thread: a ``poll`` running in another thread
        returns early and the close waits for it (up to ``timeout_s``, default 30 s).
        """
        with self._close_lock:
            if self._closed:
                return
            wait_s = _CLOSE_TIMEOUT_S if timeout_s is None else max(0.0, timeout_s)
            deadline = time.monotonic() + wait_s
            self._closing.set()
            self._membership.notify()
            me = threading.get_ident()
            with self._guard:
                while self._owner is not None and self._owner != me:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._guard.wait(remaining)
                other_still_running = self._owner is not None and self._owner != me
                if not other_still_running:
                    self._owner = me
                    self._depth += 1
            try:
                if other_still_running:
                    log.warning("ShareConsumer.close: another thread is still in the consumer")
                else:
                    try:
                        self._finish_sessions(deadline)
                    except Exception:
                        log.exception("share group %s: closing share sessions", self._cfg.group_id)
                try:
                    self._membership.close(leave=True)
                except Exception:
                    log.exception("share group %s: leaving the group", self._cfg.group_id)
                if self._executor is not None:
                    self._executor.shutdown(wait=False, cancel_futures=True)
                self._client.close()
            finally:
                self._closed = True
                if not other_still_running:
                    with self._guard:
                        self._depth -= 1
                        if self._depth == 0:
                            self._owner = None
                            self._guard.notify_all()

    def __del__(self) -> None:
        # A consumer dropped without close(): stop its heartbeat thread; the broker releases
        # its records when the connections close and the member's session times out.
        membership = getattr(self, "_membership", None)
        if membership is not None and not getattr(self, "_closed", True):
            membership.stop_nowait()
