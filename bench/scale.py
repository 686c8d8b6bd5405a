"""Scale curves: one dimension grown at a time, and the growth law each cost shows (issue 28).

Dimensions (``--dimension``), each over ``--steps`` sizes:

* ``partitions`` -- topics of ``--partitions-per-topic`` (10) partitions, one record written
  to every partition; probe: a Metadata request for every topic, and one for a single topic.
* ``connections`` -- open client connections, each after one ApiVersions request, held open
  and idle; probe: ApiVersions round trips spread over the held connections.
* ``groups`` -- N consumer groups (KIP-848, one member subscribed to a 1-partition topic, one
  committed offset) and N share groups (one member); probe: a heartbeat of a member of each
  kind, OffsetFetch, and ListGroups.
* ``share-inflight`` -- records acquired by one share-group member and not acknowledged
  (``--inflight-partitions`` partitions, locks raised to 10,000 a partition and a 10-minute
  lock); probe: ShareFetch and ShareAcknowledge cycles of a member of another share group on
  the same topic, and the time to acknowledge the whole in-flight set at once.

Every step runs a new broker (``LocalBroker``, default config apart from what the dimension
needs, on 127.0.0.1, in a new data directory removed afterwards) and measures:

* start time: process start to ready, empty, then restart time on the populated data dir;
* broker RSS and open file descriptors (``/proc/PID/status``, ``/proc/PID/fd``), after
  populating and after the restart;
* a fixed small produce load on its own 1-partition topic (stock confluent-kafka producer,
  idempotent, ``acks=all``): p50/p99 of ``--latency-records`` (200) records produced and
  flushed one at a time, and records/s of ``--throughput-records`` (5,000) 100-byte records
  produced at once;
* the dimension's probe above;
* the broker's CPU seconds during the produce load and during the probe (the same work at
  every step, and steadier than latency on a shared machine);
* what the dimension adds to an empty broker: RSS after populating minus RSS empty, and
  restart time minus the empty start time.

Then, for every figure, the growth law: the least-squares slope of log(figure) over log(N)
(about 0: flat, about 1: linear, above 1.2: worse than linear; for a rate, of its inverse),
its growth per unit of N from the smallest step to the largest, and, for reading only, the
slope of the figure's excess over the smallest step on the steps where that excess is above
5 % (it shows a cost hidden under a constant, and also the noise). Performance is measured
here, never asserted in tests.

Example::

    python -m bench.scale --dimension partitions --quick       # a few minutes on 2 cores
    python -m bench.scale --dimension groups --steps 1,10,100,1000 --json /tmp/groups.json
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import shutil
import socket
import statistics
import struct
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # toolkit, share_latency
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the repo's packages

import toolkit
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from coordinator.launcher import LocalBroker
from txn.api_keys import ApiKey
from txn.errors import ErrorCode

console = toolkit.make_console(110)

DIMENSIONS = ("partitions", "connections", "groups", "share-inflight")
STEPS = {
    "partitions": (10, 100, 1000, 10_000),
    "connections": (10, 100, 500, 2000),
    "groups": (1, 10, 100, 1000),
    "share-inflight": (100, 1000, 10_000, 100_000),
}
QUICK = {
    "partitions": (10, 100, 1000, 3000),
    "connections": (10, 100, 1000),
    "groups": (1, 10, 100, 300),
    "share-inflight": (100, 1000, 10_000, 30_000),
}
LONG = 600_000  # ms: sessions and locks that outlive a step
DIMENSION_CONFIG = {
    "partitions": {"sharetxn.max.partitions": "100000"},
    "connections": {},
    "groups": {
        "group.consumer.session.timeout.ms": str(LONG),
        "group.share.session.timeout.ms": str(LONG),
        "group.share.max.session.timeout.ms": str(LONG),
    },
    "share-inflight": {
        "group.share.partition.max.record.locks": "10000",
        "group.share.record.lock.duration.ms": str(LONG),
        "group.share.max.record.lock.duration.ms": str(LONG),
        "group.share.session.timeout.ms": str(LONG),
        "group.share.max.session.timeout.ms": str(LONG),
    },
}


# -- the broker process --------------------------------------------------------------------------


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM in KiB, and the open file descriptors, of a process."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _sep, value = line.partition(":")
        if key in {"VmRSS", "VmHWM"}:
            out[key] = int(value.split()[0])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


def broker_pid(broker: LocalBroker) -> int:
    assert broker.process is not None
    return broker.process.pid


def timed_start(broker: LocalBroker) -> float:
    started = time.perf_counter()
    broker.start()
    return time.perf_counter() - started


# -- the fixed produce load ----------------------------------------------------------------------


def produce_load(
    bootstrap: str, topic: str, latency_records: int, records: int
) -> dict[str, float]:
    """p50/p99 of records produced and flushed one at a time; records/s of a burst."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 0,
            "logger": toolkit.quiet_logger(),
        }
    )
    failed: list[Any] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(err)

    producer.produce(topic, b"warm-up", on_delivery=report)
    producer.flush(30)
    lat: list[float] = []
    for i in range(latency_records):
        t0 = time.perf_counter()
        producer.produce(topic, b"%d" % i, on_delivery=report)
        producer.flush(30)
        lat.append(time.perf_counter() - t0)
    value = b"v" * 100
    t0 = time.perf_counter()
    for i in range(records):
        producer.produce(topic, value, on_delivery=report)
        if i % 500 == 0:
            producer.poll(0)
    left = producer.flush(60)
    burst = time.perf_counter() - t0
    if failed or left:
        raise toolkit.CheckFailed(f"produce load: {len(failed)} failed, {left} unsent")
    return {
        "produce_p50_ms": toolkit.pct(lat, 50) * 1000,
        "produce_p99_ms": toolkit.pct(lat, 99) * 1000,
        "produce_records_s": records / burst,
    }


# -- plumbing ------------------------------------------------------------------------------------


def progress() -> Progress:
    return Progress(
        TextColumn("  {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def create_topics(bootstrap: str, names: list[str], partitions: int, label: str) -> None:
    """Create ``names`` in chunks of 100, with a progress bar."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": toolkit.quiet_logger()})
    with progress() as bar:
        task = bar.add_task(label, total=len(names))
        for chunk in chunks(names, 100):
            futures = admin.create_topics(
                [NewTopic(t, partitions, 1) for t in chunk], operation_timeout=60
            )
            for fut in futures.values():
                try:
                    fut.result()
                except KafkaException as exc:
                    raise toolkit.CheckFailed(f"CreateTopics: {exc}") from exc
            bar.advance(task, len(chunk))


def fill(bootstrap: str, topic: str, records: int) -> None:
    """``records`` keyed 100-byte records, in log batches of at most 100 (an acquisition is
    rounded up to a batch)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "enable.idempotence": True,
            "batch.num.messages": 100,
            "logger": toolkit.quiet_logger(),
        }
    )
    value = b"x" * 100
    with progress() as bar:
        task = bar.add_task(f"{records} records written", total=records)
        for i in range(records):
            while True:
                try:
                    producer.produce(topic, value, key=str(i).encode())
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 1000 == 0:
                producer.poll(0)
                bar.update(task, completed=i)
        if producer.flush(300):
            raise toolkit.CheckFailed(f"{topic}: records left unsent")


def median_ms(run: Callable[[], Any], times: int) -> float:
    values = []
    for _ in range(times):
        t0 = time.perf_counter()
        run()
        values.append(time.perf_counter() - t0)
    return statistics.median(values) * 1000


def client(bootstrap: str) -> Any:
    from producer.protocol.client import KafkaClient  # noqa: PLC0415

    kc = KafkaClient(bootstrap, client_id="bench-scale")
    kc.refresh_metadata([])
    return kc


def check(code: Any, what: str) -> None:
    if int(code) != ErrorCode.NONE:
        raise toolkit.CheckFailed(f"{what}: {ErrorCode(int(code)).name}")


# -- the dimensions ------------------------------------------------------------------------------


@dataclass
class Dimension:
    """What a step of one dimension populates, and its probe."""

    bootstrap: str
    n: int
    args: argparse.Namespace
    keep: list[Any] = field(default_factory=list)  # connections and clients held for the step

    def populate(self) -> None:
        raise NotImplementedError

    def probe(self) -> dict[str, float]:
        raise NotImplementedError

    def probe_after_restart(self) -> dict[str, float]:
        return {}

    def close(self) -> None:
        for item in self.keep:
            with contextlib.suppress(Exception):
                item.close()
        self.keep.clear()


class Partitions(Dimension):
    def populate(self) -> None:
        per = self.args.partitions_per_topic
        self.topics = [f"p{i:05d}" for i in range(max(1, self.n // per))]
        per = min(per, self.n)
        t0 = time.perf_counter()
        create_topics(self.bootstrap, self.topics, per, f"{self.n} partitions")
        self.create_s = time.perf_counter() - t0
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "linger.ms": 20,
                "acks": "all",
                "logger": toolkit.quiet_logger(),
            }
        )
        with progress() as bar:
            task = bar.add_task("a record to every partition", total=len(self.topics) * per)
            for topic in self.topics:
                for p in range(per):
                    producer.produce(topic, b"x", partition=p)
                producer.poll(0)
                bar.advance(task, per)
            if producer.flush(300):
                raise toolkit.CheckFailed("records left unsent")
        self.kc = client(self.bootstrap)
        self.keep.append(self.kc)

    def _metadata(self, topics: list[str] | None) -> Any:
        body = {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
        }
        return self.kc.send(None, ApiKey.METADATA, body, min_version=1)

    def probe(self) -> dict[str, float]:
        resp = self._metadata(None)
        got = sum(len(t.partitions) for t in resp.topics if str(t.name).startswith("p"))
        if got < self.n:
            raise toolkit.CheckFailed(f"Metadata lists {got} partitions, not {self.n}")
        return {
            "create_topics_s": self.create_s,
            "metadata_all_ms": median_ms(lambda: self._metadata(None), 5),
            "metadata_one_ms": median_ms(lambda: self._metadata([self.topics[-1]]), 20),
        }

    def probe_after_restart(self) -> dict[str, float]:
        self.close()
        self.kc = client(self.bootstrap)
        self.keep.append(self.kc)
        return {"metadata_all_after_restart_ms": median_ms(lambda: self._metadata(None), 5)}


def api_versions_request(correlation: int) -> bytes:
    client_id = b"scale"
    body = struct.pack(">hhih", ApiKey.API_VERSIONS, 0, correlation, len(client_id)) + client_id
    return struct.pack(">i", len(body)) + body


def read_response(sock: socket.socket) -> bytes:
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            raise toolkit.CheckFailed("connection closed by the broker")
        head += chunk
    (size,) = struct.unpack(">i", head)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise toolkit.CheckFailed("connection closed by the broker")
        data += chunk
    return data


class Connections(Dimension):
    def populate(self) -> None:
        host, _sep, port = self.bootstrap.rpartition(":")
        with progress() as bar:
            task = bar.add_task(f"{self.n} connections", total=self.n)
            for i in range(self.n):
                sock = socket.create_connection((host, int(port)), timeout=30)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.sendall(api_versions_request(i))
                read_response(sock)
                self.keep.append(sock)
                bar.advance(task)

    def probe(self) -> dict[str, float]:
        values = []
        for i in range(200):
            sock = self.keep[(i * 7919) % len(self.keep)]
            t0 = time.perf_counter()
            sock.sendall(api_versions_request(10_000 + i))
            read_response(sock)
            values.append(time.perf_counter() - t0)
        return {
            "api_versions_p50_ms": toolkit.pct(values, 50) * 1000,
            "api_versions_p99_ms": toolkit.pct(values, 99) * 1000,
        }

    def probe_after_restart(self) -> dict[str, float]:
        for sock in self.keep:
            sock.close()  # the broker closed them
        self.keep.clear()
        return {}


class Groups(Dimension):
    def populate(self) -> None:
        from txn.ids import KEY_TYPE_GROUP  # noqa: PLC0415

        self.topic = "groups-input"
        create_topics(self.bootstrap, [self.topic], 1, "the groups' topic")
        self.kc = client(self.bootstrap)
        self.keep.append(self.kc)
        self.kc.refresh_metadata([self.topic])
        self.node = self.kc.coordinator_for(KEY_TYPE_GROUP, "g00000")
        self.consumers: list[tuple[str, str, int]] = []  # group, member, epoch
        self.shares: list[tuple[str, str, int]] = []
        with progress() as bar:
            task = bar.add_task(f"{self.n} consumer + {self.n} share groups", total=self.n)
            for i in range(self.n):
                group = f"g{i:05d}"
                member, epoch = self._consumer_heartbeat(group, str(uuid.uuid4()), 0)
                self.consumers.append((group, member, epoch))
                self._commit(group, member, epoch, i)
                share = f"s{i:05d}"
                member, epoch = self._share_heartbeat(share, str(uuid.uuid4()), 0)
                self.shares.append((share, member, epoch))
                bar.advance(task)

    def _consumer_heartbeat(self, group: str, member: str, epoch: int) -> tuple[str, int]:
        joining = epoch == 0
        body = {
            "group_id": group,
            "member_id": member,
            "member_epoch": epoch,
            "rebalance_timeout": 60_000 if joining else -1,
            "subscribed_topic_names": [self.topic] if joining else None,
            "server_assignor": None,
            "topic_partitions": [] if joining else None,
        }
        resp = self.kc.send(self.node, ApiKey.CONSUMER_GROUP_HEARTBEAT, body)
        check(resp.error_code, f"ConsumerGroupHeartbeat {group}")
        return str(resp.member_id or member), int(resp.member_epoch)

    def _share_heartbeat(self, group: str, member: str, epoch: int) -> tuple[str, int]:
        body = {
            "group_id": group,
            "member_id": member,
            "member_epoch": epoch,
            "subscribed_topic_names": [self.topic] if epoch == 0 else None,
        }
        resp = self.kc.send(self.node, ApiKey.SHARE_GROUP_HEARTBEAT, body)
        check(resp.error_code, f"ShareGroupHeartbeat {group}")
        return str(resp.member_id or member), int(resp.member_epoch)

    def _commit(self, group: str, member: str, epoch: int, offset: int) -> None:
        body = {
            "group_id": group,
            "generation_id_or_member_epoch": epoch,
            "member_id": member,
            "group_instance_id": None,
            "retention_time": -1,
            "topics": [
                {
                    "name": self.topic,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        }
        resp = self.kc.send(self.node, ApiKey.OFFSET_COMMIT, body)
        for t in resp.topics:
            for p in t.partitions:
                check(p.error_code, f"OffsetCommit {group}")

    def _offset_fetch(self, group: str) -> None:
        body = {
            "group_id": group,
            "topics": [{"name": self.topic, "partition_indexes": [0]}],
            "require_stable": False,
        }
        resp = self.kc.send(self.node, ApiKey.OFFSET_FETCH, body)
        check(getattr(resp, "error_code", 0), f"OffsetFetch {group}")

    def probe(self) -> dict[str, float]:
        cons: list[float] = []
        share: list[float] = []
        fetch: list[float] = []
        for i in range(100):
            k = (i * 7919) % self.n
            group, member, epoch = self.consumers[k]
            t0 = time.perf_counter()
            self.consumers[k] = (group, *self._consumer_heartbeat(group, member, epoch))
            cons.append(time.perf_counter() - t0)
            group, member, epoch = self.shares[k]
            t0 = time.perf_counter()
            self.shares[k] = (group, *self._share_heartbeat(group, member, epoch))
            share.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            self._offset_fetch(self.consumers[k][0])
            fetch.append(time.perf_counter() - t0)
        list_groups = median_ms(
            lambda: self.kc.send(self.node, ApiKey.LIST_GROUPS, {"states_filter": []}), 5
        )
        return {
            "consumer_heartbeat_p50_ms": toolkit.pct(cons, 50) * 1000,
            "consumer_heartbeat_p99_ms": toolkit.pct(cons, 99) * 1000,
            "share_heartbeat_p50_ms": toolkit.pct(share, 50) * 1000,
            "share_heartbeat_p99_ms": toolkit.pct(share, 99) * 1000,
            "offset_fetch_p50_ms": toolkit.pct(fetch, 50) * 1000,
            "list_groups_ms": list_groups,
        }

    def probe_after_restart(self) -> dict[str, float]:
        self.close()
        self.kc = client(self.bootstrap)
        self.keep.append(self.kc)
        resp = self.kc.send(self.node, ApiKey.LIST_GROUPS, {"states_filter": []})
        found = sum(1 for g in resp.groups if str(g.group_id)[:1] in "gs")
        if found < 2 * self.n:
            raise toolkit.CheckFailed(f"after the restart {found} groups, not {2 * self.n}")
        return {}


class ShareInflight(Dimension):
    def populate(self) -> None:
        from share_latency import RawMember, _acquired  # noqa: PLC0415

        parts = self.args.inflight_partitions
        records = self.n + 100 * 60  # and the probe's cycles
        self.topic = "inflight"
        create_topics(self.bootstrap, [self.topic], parts, "the topic")
        fill(self.bootstrap, self.topic, records)
        self.holder = RawMember(self.bootstrap, self._group("hold"), self.topic)
        self.keep.append(self.holder)
        self.holder.heartbeat()
        self.held: dict[int, list[tuple[int, int]]] = {}
        count = 0
        with progress() as bar:
            task = bar.add_task(f"{self.n} records in flight", total=self.n)
            while count < self.n:
                want = min(self.n - count, 2000)
                got, n = _acquired(self.holder.fetch(want, 1 << 26), "hold")
                for p, ranges in got.items():
                    self.held.setdefault(p, []).extend(ranges)
                count += n
                bar.update(task, completed=min(count, self.n))
        self.acquired = count

    def _group(self, prefix: str) -> str:
        group = toolkit.new_share_group(self.bootstrap, prefix)
        from producer import Admin  # noqa: PLC0415

        with Admin(self.bootstrap) as admin:
            admin.alter_group_configs(group, {"share.record.lock.duration.ms": str(LONG)})
        return group

    def probe(self) -> dict[str, float]:
        from share_latency import RawMember, _acquired, _check_ack  # noqa: PLC0415

        other = RawMember(self.bootstrap, self._group("probe"), self.topic)
        self.keep.append(other)
        other.heartbeat()
        acquired, _n = _acquired(other.fetch(100, 1 << 20), "probe")
        _check_ack(other.acknowledge(acquired), "probe")
        fetch_s: list[float] = []
        ack_s: list[float] = []
        for _ in range(50):
            t0 = time.perf_counter()
            acquired, _n = _acquired(other.fetch(100, 1 << 20), "probe")
            t1 = time.perf_counter()
            _check_ack(other.acknowledge(acquired), "probe")
            fetch_s.append(t1 - t0)
            ack_s.append(time.perf_counter() - t1)
        return {
            "acquired": float(self.acquired),
            "share_fetch_p50_ms": toolkit.pct(fetch_s, 50) * 1000,
            "share_ack_p50_ms": toolkit.pct(ack_s, 50) * 1000,
            "share_cycle_p99_ms": toolkit.pct(
                [f + a for f, a in zip(fetch_s, ack_s, strict=True)], 99
            )
            * 1000,
        }

    def ack_all(self) -> dict[str, float]:
        from share_latency import _check_ack  # noqa: PLC0415

        t0 = time.perf_counter()
        _check_ack(self.holder.acknowledge(self.held), "ack all")
        return {"ack_all_in_flight_ms": (time.perf_counter() - t0) * 1000}


KINDS: dict[str, type[Dimension]] = {
    "partitions": Partitions,
    "connections": Connections,
    "groups": Groups,
    "share-inflight": ShareInflight,
}


# -- one step ------------------------------------------------------------------------------------


def run_step(args: argparse.Namespace, n: int, config: dict[str, str]) -> dict[str, float]:
    data_dir = Path(tempfile.mkdtemp(prefix="sharetxn-scale-"))
    broker = LocalBroker(data_dir=data_dir, config=config, startup_timeout_s=600)
    row: dict[str, float] = {"n": float(n)}
    dim: Dimension | None = None
    try:
        row["start_s"] = timed_start(broker)
        pid = broker_pid(broker)
        row["rss_empty_mb"] = proc_status(pid)["VmRSS"] / 1024
        b = broker.bootstrap_servers
        toolkit.create_topics(b, ["load"], 1)
        dim = KINDS[args.dimension](b, n, args)
        t0 = time.perf_counter()
        dim.populate()
        row["populate_s"] = time.perf_counter() - t0
        status = proc_status(pid)
        row["rss_mb"] = status["VmRSS"] / 1024
        row["fds"] = status["fds"]
        cpu0 = toolkit.cpu_seconds(pid)
        row.update(produce_load(b, "load", args.latency_records, args.throughput_records))
        cpu1 = toolkit.cpu_seconds(pid)
        row.update(dim.probe())
        # Broker CPU is steadier than latency on a shared machine: the same work every step.
        row["produce_broker_cpu_s"] = cpu1 - cpu0
        row["probe_broker_cpu_s"] = toolkit.cpu_seconds(pid) - cpu1
        cpu0 = toolkit.cpu_seconds(pid)
        time.sleep(args.idle_seconds)
        row["idle_cpu_pct"] = (toolkit.cpu_seconds(pid) - cpu0) / args.idle_seconds * 100
        if isinstance(dim, ShareInflight):
            row.update(dim.ack_all())
        dim.close()
        broker.stop(timeout_s=120)
        row["restart_s"] = timed_start(broker)
        pid = broker_pid(broker)
        row.update(dim.probe_after_restart())
        row["rss_restart_mb"] = proc_status(pid)["VmRSS"] / 1024
        # What the dimension costs on top of an empty broker of the same step.
        row["rss_added_mb"] = row["rss_mb"] - row["rss_empty_mb"]
        row["restart_added_s"] = row["restart_s"] - row["start_s"]
    finally:
        if dim is not None:
            dim.close()
        broker.stop(timeout_s=120)
        shutil.rmtree(data_dir, ignore_errors=True)
    return row


# -- growth laws ---------------------------------------------------------------------------------


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log(y) over log(x); None with fewer than two usable points."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = statistics.fmean(p[0] for p in pts)
    my = statistics.fmean(p[1] for p in pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


def law(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 0.2:
        return "flat"
    if value < 0.8:
        return "sublinear"
    if value <= 1.2:
        return "linear"
    return "WORSE"


def excess_slope(xs: list[float], ys: list[float]) -> float | None:
    """The slope of ``ys``' excess over the smallest step, on the steps where that excess is
    above 5 % of the smallest step's figure; None when fewer than two are."""
    base = ys[0]
    pts = [
        (x, y - base) for x, y in zip(xs[1:], ys[1:], strict=True) if y - base > 0.05 * abs(base)
    ]
    return slope([p[0] for p in pts], [p[1] for p in pts]) if len(pts) >= 2 else None


def laws(rows: list[dict[str, float]]) -> dict[str, dict[str, Any]]:
    """Per figure: the log-log slope, and the slope of its excess over the smallest step."""
    xs = [r["n"] for r in rows]
    out: dict[str, dict[str, Any]] = {}
    for key in rows[0]:
        if key == "n" or not all(key in r for r in rows):
            continue
        ys = [r[key] for r in rows]
        if key.endswith("_records_s"):
            ys = [1 / y for y in ys]  # a rate: its cost per record is what grows
        whole = slope(xs, ys)
        excess = excess_slope(xs, ys)
        out[key] = {"slope": whole, "excess_slope": excess, "law": law(whole)}
    return out


def per_unit(rows: list[dict[str, float]], key: str) -> str:
    """The figure's growth from the smallest step to the largest, per unit of N."""
    first, last = rows[0], rows[-1]
    if key not in first or key not in last or last["n"] == first["n"]:
        return "-"
    value = (last[key] - first[key]) / (last["n"] - first["n"])
    return f"{value:.3g}"


def fmt(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def tables(dimension: str, rows: list[dict[str, float]], fitted: dict[str, Any]) -> list[Table]:
    keys = [k for k in rows[0] if k != "n"]
    curve = Table(title=f"scale: {dimension}")
    curve.add_column("figure")
    for r in rows:
        curve.add_column(f"{r['n']:,.0f}", justify="right")
    curve.add_column("per unit", justify="right")
    curve.add_column("slope", justify="right")
    curve.add_column("excess slope", justify="right")
    curve.add_column("law")
    for key in keys:
        f = fitted.get(key, {})
        s, e = f.get("slope"), f.get("excess_slope")
        curve.add_row(
            key,
            *[fmt(r[key]) if key in r else "-" for r in rows],
            per_unit(rows, key),
            "-" if s is None else f"{s:.2f}",
            "-" if e is None else f"{e:.2f}",
            f.get("law", "-"),
        )
    return [curve]


# -- main ----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dimension", choices=DIMENSIONS, required=True)
    parser.add_argument("--steps", help="comma-separated sizes (default: the dimension's)")
    parser.add_argument("--quick", action="store_true", help="smaller steps: minutes, not tens")
    toolkit.add_int_options(
        parser,
        latency_records=200,
        throughput_records=5000,
        partitions_per_topic=10,
        inflight_partitions=20,
    )
    parser.add_argument("--idle-seconds", type=float, default=2.0)
    toolkit.add_broker_arguments(parser)
    args, run = toolkit.begin(parser, console, "scale.py", argv, rounds=1)
    if args.steps:
        steps = [int(s) for s in args.steps.split(",")]
    else:
        steps = list((QUICK if args.quick else STEPS)[args.dimension])
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    load = os.getloadavg()
    console.print(
        f"ulimit -n {soft} (the broker keeps at most half open for segments: "
        f"sharetxn.log.max.open.files); load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    if args.dimension == "connections" and max(steps) + 100 > soft:
        raise toolkit.CheckFailed(f"{max(steps)} connections need ulimit -n above {soft}")
    config = {**DIMENSION_CONFIG[args.dimension], **toolkit.broker_config(args)}
    rows: list[dict[str, float]] = []
    started = time.perf_counter()
    for n in steps:
        console.print(f"[bold]{args.dimension} = {n:,}[/]")
        t0 = time.perf_counter()
        rows.append(run_step(args, n, config))
        console.print(
            f"  step took {time.perf_counter() - t0:.0f} s, load average {os.getloadavg()[0]:.2f}"
        )
    fitted = laws(rows)
    for table in tables(args.dimension, rows, fitted):
        console.print(table)
    run.finish(
        args,
        console,
        time.perf_counter() - started,
        {
            "dimension": args.dimension,
            "ulimit_n": soft,
            "load_average": [load, os.getloadavg()],
            "steps": rows,
            "laws": fitted,
        },
    )
    return 0


if __name__ == "__main__":
    toolkit.main_guard(main, console)
