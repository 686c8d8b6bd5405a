"""A share-group member driven request by request (heartbeat, ShareFetch, ShareAcknowledge)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from tests.reference.differential.ctx import Ctx, client_uuid, member_fields
from tests.reference.differential.wire import Wire, plain

ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4

#: (first offset, last offset, [ack types]) as ShareFetch/ShareAcknowledge carry them.
AckBatch = tuple[int, int, Sequence[int]]


class ShareMember:
    """One member of a share group on its own connection (its share session)."""

    def __init__(self, ctx: Ctx, group: str, topics: Sequence[str]) -> None:
        self.ctx = ctx
        self.group = group
        self.topics = list(topics)
        self.member_id = client_uuid()
        self.epoch = 0
        self.session_epoch = 0
        self.wire: Wire = ctx.wire()

    # -- membership ----------------------------------------------------------------------

    def heartbeat(self, epoch: int | None = None, topics: Sequence[str] | None = None) -> Any:
        resp = self.wire.call(
            76,
            {
                **member_fields(self.group, self.member_id, self.epoch if epoch is None else epoch),
                "rack_id": None,
                "subscribed_topic_names": self.topics if topics is None else list(topics),
            },
        )
        if int(resp.error_code) == 0 and int(resp.member_epoch) >= 0:
            self.epoch = int(resp.member_epoch)
        return resp

    def assignment(self, resp: Any) -> list[list[Any]]:
        """[[topic, [partitions]]] of a heartbeat answer (None: unchanged)."""
        if resp.assignment is None:
            return []
        names = {self.ctx.topic_id(t): t for t in self.topics}
        return sorted(
            [names.get(tp.topic_id, "?"), sorted(int(p) for p in tp.partitions)]
            for tp in resp.assignment.topic_partitions
        )

    def join(self, partitions: int = 1, timeout_s: float = 20.0) -> list[list[Any]]:
        """Heartbeat until the assignment holds ``partitions`` partitions in all."""
        deadline = time.monotonic() + timeout_s
        assigned: list[list[Any]] = []
        while True:
            resp = self.heartbeat()
            err = plain(resp.error_code, "error_code")
            if err != "NONE":
                msg = f"share heartbeat failed: {err}"
                raise RuntimeError(msg)
            if resp.assignment is not None:
                assigned = self.assignment(resp)
            if sum(len(p) for _, p in assigned) >= partitions or time.monotonic() > deadline:
                return assigned
            time.sleep(0.1)

    def leave(self) -> Any:
        resp = self.heartbeat(epoch=-1)
        return {"error_code": plain(resp.error_code, "error_code"), "epoch": int(resp.member_epoch)}

    # -- fetch and acknowledge -----------------------------------------------------------

    def _topics(
        self, acks: dict[tuple[str, int], Sequence[AckBatch]] | None, with_all: bool
    ) -> list[dict[str, Any]]:
        by_topic: dict[str, dict[int, Sequence[AckBatch]]] = {}
        if with_all:
            for t in self.topics:
                by_topic.setdefault(t, {})
        for (t, p), batches in (acks or {}).items():
            by_topic.setdefault(t, {})[p] = batches
        out = []
        for t, parts in by_topic.items():
            plist = parts if parts else {0: []}
            out.append(
                {
                    "topic_id": self.ctx.topic_id(t),
                    "partitions": [
                        {
                            "partition_index": p,
                            "acknowledgement_batches": [
                                {"first_offset": f, "last_offset": la, "acknowledge_types": list(k)}
                                for f, la, k in b
                            ],
                        }
                        for p, b in sorted(plist.items())
                    ],
                }
            )
        return out

    def fetch_raw(
        self,
        acks: dict[tuple[str, int], Sequence[AckBatch]] | None = None,
        *,
        max_records: int = 500,
        max_wait_ms: int = 500,
        session_epoch: int | None = None,
        partitions: Sequence[int] = (0,),
        acquire_mode: int = 0,
        batch_size: int | None = None,
        renew: bool = False,
        topics: list[dict[str, Any]] | None = None,
        min_bytes: int = 1,
        max_bytes: int = 1 << 20,
    ) -> Any:
        if topics is None:
            topics = self._topics(acks, with_all=True)
            for entry in topics:
                listed = {p["partition_index"] for p in entry["partitions"]}
                entry["partitions"] += [
                    {"partition_index": p, "acknowledgement_batches": []}
                    for p in partitions
                    if p not in listed
                ]
        return self._session_call(
            78,
            session_epoch,
            0,
            lambda epoch: {
                "max_wait": max_wait_ms,
                "min_bytes": min_bytes,
                "max_bytes": max_bytes,
                "max_records": max_records,
                "batch_size": max_records if batch_size is None else batch_size,
                "share_acquire_mode": acquire_mode,
                "is_renew_ack": renew,
                "topics": [] if epoch > 0 and not acks and not renew else topics,
                "forgotten_topics_data": [],
            },
        )

    def _session_call(
        self,
        api_key: int,
        session_epoch: int | None,
        first_counted: int,
        fields: Callable[[int], dict[str, Any]],
    ) -> Any:
        """A share-session request at ``session_epoch`` (default: the member's own epoch); a
        success at its own epoch ``first_counted`` or later moves that epoch on."""
        epoch = self.session_epoch if session_epoch is None else session_epoch
        resp = self.wire.call(
            api_key,
            {
                "group_id": self.group,
                "member_id": self.member_id,
                "share_session_epoch": epoch,
                **fields(epoch),
            },
        )
        if int(resp.error_code) == 0 and session_epoch is None and epoch >= first_counted:
            self.session_epoch = epoch + 1
        return resp

    def fetch(
        self, acks: dict[tuple[str, int], Sequence[AckBatch]] | None = None, **kw: Any
    ) -> Any:
        """One ShareFetch; plain answer (error, per partition: acquired records, records)."""
        return self.observe(self.fetch_raw(acks, **kw))

    def observe(self, resp: Any) -> Any:
        names = {self.ctx.topic_id(t): t for t in self.topics}
        return {
            "error_code": plain(resp.error_code, "error_code"),
            "partitions": sorted(
                (
                    {
                        "topic": names.get(t.topic_id, "?"),
                        **plain(p),
                    }
                    for t in resp.responses
                    for p in t.partitions
                ),
                key=lambda p: (p["topic"], p["partition_index"]),
            ),
        }

    def fetch_until(self, count: int, timeout_s: float = 15.0, **kw: Any) -> list[list[int]]:
        """ShareFetch until ``count`` records are acquired; [[first, last, delivery count]]."""
        deadline = time.monotonic() + timeout_s
        got: list[list[int]] = []
        while sum(last - first + 1 for first, last, _ in got) < count:
            resp = self.fetch_raw(**kw)
            if int(resp.error_code) != 0:
                msg = f"share fetch failed: {plain(resp.error_code, 'error_code')}"
                raise RuntimeError(msg)
            for t in resp.responses:
                for p in t.partitions:
                    got += [
                        [int(a.first_offset), int(a.last_offset), int(a.delivery_count)]
                        for a in p.acquired_records
                    ]
            if time.monotonic() > deadline:
                break
        return got

    def acknowledge(
        self,
        acks: dict[tuple[str, int], Sequence[AckBatch]],
        *,
        session_epoch: int | None = None,
        renew: bool = False,
    ) -> Any:
        fields = {"is_renew_ack": renew, "topics": self._topics(acks, with_all=False)}
        return self.observe(self._session_call(79, session_epoch, 1, lambda _epoch: fields))

    def close_session(self) -> Any:
        """ShareAcknowledge with epoch -1: closes the share session (releasing its records)."""
        return self.acknowledge({}, session_epoch=-1)


def share_group(ctx: Ctx, prefix: str = "g", reset: str | None = "earliest") -> str:
    group = ctx.name(prefix)
    ctx.find_coordinator(group, 0)
    if reset is not None:
        err = ctx.group_config(group, {"share.auto.offset.reset": reset})
        if err != "NONE":
            msg = f"group config: {err}"
            raise RuntimeError(msg)
    return group


def unjoined_member(ctx: Ctx, prefix: str) -> tuple[str, ShareMember]:
    """A new topic holding one record, and a member of a new share group that has not joined."""
    t = ctx.create_topic(prefix)
    ctx.produce(t, ["a"])
    return t, ShareMember(ctx, share_group(ctx), [t])


def describe_offsets(ctx: Ctx, group: str, topics: Sequence[str] | None = None) -> Any:
    resp = ctx.call(
        90,
        {
            "groups": [
                {
                    "group_id": group,
                    "topics": None
                    if topics is None
                    else [{"topic_name": t, "partitions": [0]} for t in topics],
                }
            ]
        },
    )
    return plain(resp.groups[0])


def describe_group(ctx: Ctx, group: str) -> Any:
    g = ctx.describe_group(77, group)
    return {
        "error_code": plain(g.error_code, "error_code"),
        "group_state": g.group_state,
        "members": len(g.members),
        "group_epoch": int(g.group_epoch),
        "assignment_epoch": int(g.assignment_epoch),
    }
