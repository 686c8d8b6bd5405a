"""What a scenario gets: one broker's address, unique names, and request helpers.

Names carry the run token (the same for both brokers of one run, so observations that
contain a name compare equal once the token is blanked).  Helpers send one request each and
return the plain observation of its answer (``wire.plain``); raw values a later request
needs (producer ids, topic ids, member ids) stay on the objects that hold them.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from tests.reference.differential.wire import Wire, plain
from txn.batch import build_batch
from txn.errors import ErrorCode

GROUP_RESOURCE = 32
TOPIC_RESOURCE = 2
SET = 0
DELETE = 1


def client_uuid() -> str:
    """A member id as Kafka's clients make them (Uuid.randomUuid().toString())."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def member_fields(group: str, member_id: str, epoch: int) -> dict[str, Any]:
    """The fields a KIP-848 or KIP-932 heartbeat opens with: who is heartbeating, at what epoch."""
    return {"group_id": group, "member_id": member_id, "member_epoch": epoch}


def _retrying_not_leader(attempt: Callable[[], Any]) -> Any:
    """``attempt()`` (a plain partition answer) again while it is NOT_LEADER_OR_FOLLOWER, 5 s."""
    deadline = time.monotonic() + 5
    while True:
        out = attempt()
        if out["error_code"] != "NOT_LEADER_OR_FOLLOWER" or time.monotonic() > deadline:
            return out
        time.sleep(0.05)


class Ctx:
    """One scenario run against one broker."""

    def __init__(self, bootstrap: str, token: str, target: str) -> None:
        self.bootstrap = bootstrap
        self.token = token
        self.target = target
        self._wires: list[Wire] = []
        self._wire: Wire | None = None
        self._topic_ids: dict[str, uuid.UUID] = {}

    # -- plumbing ------------------------------------------------------------------------

    def name(self, prefix: str) -> str:
        return f"d-{prefix}-{self.token}"

    def wire(self) -> Wire:
        """A new connection (closed at the end of the scenario)."""
        w = Wire(self.bootstrap)
        self._wires.append(w)
        return w

    @property
    def w(self) -> Wire:
        """The scenario's main connection."""
        if self._wire is None:
            self._wire = self.wire()
        return self._wire

    def call(self, api_key: int, body: dict[str, Any], version: int | None = None) -> Any:
        return self.w.call(api_key, body, version)

    def close(self) -> None:
        for w in self._wires:
            w.close()

    def describe_group(self, api_key: int, group: str) -> Any:
        """The described group of a ConsumerGroupDescribe or ShareGroupDescribe (``api_key``)."""
        resp = self.call(api_key, {"group_ids": [group], "include_authorized_operations": False})
        return resp.groups[0]

    # -- topics --------------------------------------------------------------------------

    def create_topic(
        self, prefix: str, partitions: int = 1, configs: dict[str, str] | None = None
    ) -> str:
        name = self.name(prefix)
        err = self.create_topic_raw(name, partitions, configs)
        if err != "NONE":
            msg = f"could not create {name}: {err}"
            raise RuntimeError(msg)
        self.wait_topic(name, partitions)
        return name

    def create_topic_raw(
        self, name: str, partitions: int = 1, configs: dict[str, str] | None = None
    ) -> str:
        resp = self.call(
            19,
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                    }
                ],
                "timeout": 30000,
                "validate_only": False,
            },
        )
        return str(plain(resp.topics[0].error_code, "error_code"))

    def metadata(self, names: Sequence[str], auto_create: bool = False) -> Any:
        return self.call(
            3,
            {
                "topics": [{"name": n, "topic_id": uuid.UUID(int=0)} for n in names],
                "allow_auto_topic_creation": auto_create,
            },
        )

    def wait_topic(self, name: str, partitions: int, timeout_s: float = 15.0) -> None:
        """Until Metadata lists every partition with a leader (Kafka creates asynchronously)."""
        deadline = time.monotonic() + timeout_s
        while True:
            t = self.metadata([name]).topics[0]
            ok = int(t.error_code) == 0 and len(t.partitions) == partitions
            if ok and all(int(p.leader_id) >= 0 for p in t.partitions):
                self._topic_ids[name] = t.topic_id
                return
            if time.monotonic() > deadline:
                msg = f"topic {name} not ready"
                raise RuntimeError(msg)
            time.sleep(0.05)

    def topic_id(self, name: str) -> uuid.UUID:
        if name not in self._topic_ids:
            self._topic_ids[name] = self.metadata([name]).topics[0].topic_id
        return self._topic_ids[name]

    # -- produce and fetch ---------------------------------------------------------------

    def produce(
        self,
        topic: str,
        values: Sequence[str | None],
        *,
        partition: int = 0,
        keys: Sequence[str | None] | None = None,
        pid: int = -1,
        epoch: int = -1,
        seq: int = -1,
        txn_id: str | None = None,
        acks: int = -1,
        wire: Wire | None = None,
        batch: bytes | None = None,
    ) -> Any:
        """Produce one batch; the plain partition response (error, base offset, ...)."""
        if batch is None:
            recs = [
                (
                    None if keys is None or keys[i] is None else str(keys[i]).encode(),
                    None if v is None else v.encode(),
                )
                for i, v in enumerate(values)
            ]
            batch = build_batch(
                recs,
                timestamp_ms=int(time.time() * 1000),
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq,
                transactional=txn_id is not None,
            )
        body = {
            "transactional_id": txn_id,
            "acks": acks,
            "timeout": 10000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        }
        # Kafka's clients retry NOT_LEADER_OR_FOLLOWER; Kafka answers it while it verifies a
        # transactional batch against a busy coordinator (KIP-890 part 1).
        return _retrying_not_leader(
            lambda: plain((wire or self.w).call(0, body).responses[0].partition_responses[0])
        )

    def fetch(
        self,
        topic: str,
        offset: int = 0,
        *,
        partition: int = 0,
        isolation: int = 0,
        max_wait_ms: int = 0,
        max_bytes: int = 1 << 20,
        topic_id: uuid.UUID | None = None,
    ) -> Any:
        """One Fetch (sessionless); the plain partition response."""
        # a fresh partition's leader may not serve fetches yet; clients retry this
        return _retrying_not_leader(
            lambda: self._fetch(
                topic, offset, partition, isolation, max_wait_ms, max_bytes, topic_id
            )
        )

    def fetch_raw(self, topic: str, offset: int = 0, *, max_bytes: int = 1 << 20) -> bytes:
        """The record bytes one Fetch answers, as the broker stores them."""
        resp = self._fetch_response(topic, offset, 0, 0, 0, max_bytes, None)
        return bytes(resp.responses[0].partitions[0].records or b"")

    def _fetch(
        self,
        topic: str,
        offset: int,
        partition: int,
        isolation: int,
        max_wait_ms: int,
        max_bytes: int,
        topic_id: uuid.UUID | None,
    ) -> Any:
        resp = self._fetch_response(
            topic, offset, partition, isolation, max_wait_ms, max_bytes, topic_id
        )
        if int(resp.error_code) != 0 or not resp.responses:
            return {"error_code": plain(resp.error_code, "error_code")}
        return plain(resp.responses[0].partitions[0])

    def _fetch_response(
        self,
        topic: str,
        offset: int,
        partition: int,
        isolation: int,
        max_wait_ms: int,
        max_bytes: int,
        topic_id: uuid.UUID | None,
    ) -> Any:
        return self.call(
            1,
            {
                "replica_id": -1,
                "max_wait": max_wait_ms,
                "min_bytes": 1 if max_wait_ms else 0,
                "max_bytes": max_bytes,
                "isolation_level": isolation,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic_id": topic_id or self.topic_id(topic),
                        "partitions": [
                            {
                                "partition": partition,
                                "current_leader_epoch": -1,
                                "fetch_offset": offset,
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": max_bytes,
                            }
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )

    def list_offset(
        self, topic: str, timestamp: int, *, partition: int = 0, isolation: int = 0
    ) -> Any:
        resp = self.call(
            2,
            {
                "replica_id": -1,
                "isolation_level": isolation,
                "timeout": 30000,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": partition,
                                "current_leader_epoch": -1,
                                "timestamp": timestamp,
                            }
                        ],
                    }
                ],
            },
        )
        p = resp.topics[0].partitions[0]
        return {"error_code": plain(p.error_code, "error_code"), "offset": int(p.offset)}

    # -- transactions --------------------------------------------------------------------

    @staticmethod
    def retrying(call: Any, timeout_s: float = 15.0) -> Any:
        """Repeat ``call`` while it answers CONCURRENT_TRANSACTIONS or, while a coordinator
        loads its log after start, COORDINATOR_LOAD_IN_PROGRESS, as Kafka's clients do."""
        deadline = time.monotonic() + timeout_s
        while True:
            result = call()
            text = str(result).upper()
            retriable = "CONCURRENT_TRANSACTIONS" in text or "COORDINATOR_LOAD_IN_PROGRESS" in text
            if not retriable or time.monotonic() > deadline:
                return result
            time.sleep(0.05)

    def init_pid(
        self, txn_id: str | None = None, timeout_ms: int = 60000, pid: int = -1, epoch: int = -1
    ) -> tuple[str, int, int]:
        """InitProducerId: (error name, producer id, epoch)."""
        if txn_id is not None:
            self.find_coordinator(txn_id, 1)
        resp = self.retrying(
            lambda: self.call(
                22,
                {
                    "transactional_id": txn_id,
                    "transaction_timeout": timeout_ms,
                    "producer_id": pid,
                    "producer_epoch": epoch,
                },
            )
        )
        return (
            str(plain(resp.error_code, "error_code")),
            int(resp.producer_id),
            int(resp.producer_epoch),
        )

    def find_coordinator(self, key: str, key_type: int) -> str:
        """FindCoordinator until it answers (Kafka loads the coordinator asynchronously)."""
        deadline = time.monotonic() + 20
        while True:
            resp = self.call(10, {"key_type": key_type, "coordinator_keys": [key]})
            err = ErrorCode(int(resp.coordinators[0].error_code))
            if err != ErrorCode.COORDINATOR_NOT_AVAILABLE or time.monotonic() > deadline:
                return err.name
            time.sleep(0.1)

    def add_partitions(
        self, txn_id: str, pid: int, epoch: int, topic: str, partitions: Sequence[int] = (0,)
    ) -> list[Any]:
        return list(
            self.retrying(lambda: self._add_partitions(txn_id, pid, epoch, topic, partitions))
        )

    def _add_partitions(
        self, txn_id: str, pid: int, epoch: int, topic: str, partitions: Sequence[int]
    ) -> list[Any]:
        resp = self.call(
            24,
            {
                "v3_and_below_transactional_id": txn_id,
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": topic, "partitions": list(partitions)}],
            },
        )
        return [
            plain(r.partition_error_code, "error_code")
            for t in resp.results_by_topic_v3_and_below
            for r in t.results_by_partition
        ]

    def end_txn(self, txn_id: str, pid: int, epoch: int, commit: bool) -> str:
        body = {
            "transactional_id": txn_id,
            "producer_id": pid,
            "producer_epoch": epoch,
            "committed": commit,
        }
        return str(self.retrying(lambda: plain(self.call(26, body).error_code, "error_code")))

    def wait_lso(self, topic: str, want: int, partition: int = 0, timeout_s: float = 15) -> int:
        """The last stable offset once it reaches ``want`` (markers are written asynchronously)."""
        deadline = time.monotonic() + timeout_s
        while True:
            lso = int(self.fetch(topic, 0, partition=partition, isolation=1)["last_stable_offset"])
            if lso >= want or time.monotonic() > deadline:
                return lso
            time.sleep(0.05)

    # -- configs -------------------------------------------------------------------------

    def alter_configs(self, resource_type: int, name: str, configs: dict[str, str | None]) -> str:
        resp = self.call(
            44,
            {
                "resources": [
                    {
                        "resource_type": resource_type,
                        "resource_name": name,
                        "configs": [
                            {
                                "name": k,
                                "config_operation": DELETE if v is None else SET,
                                "value": v,
                            }
                            for k, v in configs.items()
                        ],
                    }
                ],
                "validate_only": False,
            },
        )
        return str(plain(resp.responses[0].error_code, "error_code"))

    def group_config(self, group: str, configs: dict[str, str | None]) -> str:
        return self.alter_configs(GROUP_RESOURCE, group, configs)


def warm_up(bootstrap: str, timeout_s: float = 60.0) -> None:
    """Until the group and transaction coordinators of every internal partition answer.

    A fresh Kafka creates ``__consumer_offsets`` and ``__transaction_state`` on first use
    and loads each partition's coordinator asynchronously; scenarios must not see that.
    """
    ctx = Ctx(bootstrap, "warm", "warm-up")
    try:
        for i in range(12):
            ctx.find_coordinator(f"warm-up-{i}", 0)
            ctx.find_coordinator(f"warm-up-{i}", 1)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            groups = ctx.call(16, {"states_filter": [], "types_filter": []})
            txns = ctx.call(66, {"state_filters": [], "producer_id_filters": []})
            if int(groups.error_code) == 0 and int(txns.error_code) == 0:
                return
            time.sleep(0.2)
    finally:
        ctx.close()
