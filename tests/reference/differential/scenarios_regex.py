"""KIP-848 regex subscriptions: ConsumerGroupHeartbeat's ``SubscribedTopicRegex``.

The coordinator resolves a regex after the heartbeat that brought it (and at most every 10 s
after that), so each scenario heartbeats until the assignment it waits for arrives or a
deadline passes, and observes the topics assigned (by name), not the epochs (Kafka bumps
group epochs on metadata refreshes too, docs/conformance.md).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from tests.reference.differential.ctx import Ctx, client_uuid, member_fields
from tests.reference.differential.framework import scenario
from tests.reference.differential.wire import plain

AREA = "consumer-groups"


class RegexMember:
    """A KIP-848 member (ConsumerGroupHeartbeat v1) that may subscribe with a regex."""

    def __init__(self, ctx: Ctx, group: str, regex: str | None, topics: list[str] | None) -> None:
        self.ctx, self.group = ctx, group
        self.regex, self.topics = regex, topics
        self.member_id = client_uuid()
        self.epoch = 0
        self.owned: dict[uuid.UUID, list[int]] = {}
        self.names: dict[uuid.UUID, str] = {}

    def heartbeat(self, regex: str | None = None, topics: list[str] | None = None) -> Any:
        joining = self.epoch == 0
        resp = self.ctx.call(
            68,
            {
                **member_fields(self.group, self.member_id, self.epoch),
                "instance_id": None,
                "rack_id": None,
                "rebalance_timeout": 30000,
                "subscribed_topic_names": self.topics if joining else topics,
                "subscribed_topic_regex": self.regex if joining else regex,
                "server_assignor": None,
                "topic_partitions": []
                if joining
                else [{"topic_id": t, "partitions": ps} for t, ps in sorted(self.owned.items())],
            },
        )
        if int(resp.error_code) == 0 and int(resp.member_epoch) >= 0:
            self.epoch = int(resp.member_epoch)
            if resp.assignment is not None:
                self.owned = {
                    tp.topic_id: sorted(int(p) for p in tp.partitions)
                    for tp in resp.assignment.topic_partitions
                }
        return resp

    def assigned(self) -> list[str]:
        """The names of the topics the member owns (by Metadata, topic ids being per broker)."""
        out = []
        for topic_id in self.owned:
            if topic_id not in self.names:
                resp = self.ctx.call(
                    3,
                    {
                        "topics": [{"name": None, "topic_id": topic_id}],
                        "allow_auto_topic_creation": False,
                    },
                )
                self.names[topic_id] = str(resp.topics[0].name)
            out.append(self.names[topic_id])
        return sorted(out)

    def until(self, want: list[str], timeout_s: float = 30.0) -> list[str]:
        """Heartbeat every 0.5 s until the member owns exactly ``want`` or the deadline."""
        deadline = time.monotonic() + timeout_s
        while True:
            resp = self.heartbeat()
            if int(resp.error_code) != 0:
                return [str(plain(resp.error_code, "error_code"))]
            got = self.assigned()
            if got == sorted(want) or time.monotonic() > deadline:
                return got
            time.sleep(0.5)


def _group(ctx: Ctx) -> str:
    g = ctx.name("rxg")
    ctx.find_coordinator(g, 0)
    return g


def _described_member(ctx: Ctx, group: str, member_id: str | None = None) -> Any:
    d = ctx.describe_group(69, group)
    (m,) = [m for m in d.members if member_id is None or m.member_id == member_id]
    return {
        "error": plain(d.error_code, "error_code"),
        "regex": m.subscribed_topic_regex,
        "names": sorted(m.subscribed_topic_names),
    }


def _delete_topic(ctx: Ctx, name: str) -> str:
    resp = ctx.call(
        20, {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}], "timeout": 30000}
    )
    return str(plain(resp.responses[0].error_code, "error_code"))


@scenario(AREA)
def regex_matches_existing_topics(ctx: Ctx) -> Any:
    a1, a2 = ctx.create_topic("rxa1", 2), ctx.create_topic("rxa2")
    ctx.create_topic("rxb")
    g = _group(ctx)
    m = RegexMember(ctx, g, f"d-rxa[0-9]-{ctx.token}", None)
    first = m.heartbeat()
    return {
        "first": [plain(first.error_code, "error_code"), first.error_message],
        "assigned": m.until([a1, a2]),
        "partitions": sorted(len(ps) for ps in m.owned.values()),
        "describe": _described_member(ctx, g),
    }


@scenario(AREA)
def regex_matches_a_topic_created_later(ctx: Ctx) -> Any:
    early = ctx.create_topic("rxc1")
    g = _group(ctx)
    m = RegexMember(ctx, g, f"d-rxc.*-{ctx.token}", None)
    before = m.until([early])
    late = ctx.create_topic("rxc2")
    return {"before": before, "after": m.until([early, late], timeout_s=40)}


@scenario(AREA)
def regex_topic_deleted(ctx: Ctx) -> Any:
    keep, gone = ctx.create_topic("rxd1"), ctx.create_topic("rxd2")
    g = _group(ctx)
    m = RegexMember(ctx, g, f"d-rxd.-{ctx.token}", None)
    before = m.until([keep, gone])
    deleted = _delete_topic(ctx, gone)
    return {"before": before, "deleted": deleted, "after": m.until([keep])}


@scenario(AREA)
def regex_invalid(ctx: Ctx) -> Any:
    t = ctx.create_topic("rxe")
    g = _group(ctx)

    def join(regex: str | None, topics: list[str] | None = None) -> Any:
        resp = RegexMember(ctx, g, regex, topics).heartbeat()
        return [plain(resp.error_code, "error_code"), resp.error_message]

    joined = RegexMember(ctx, g, None, [t])
    joined.heartbeat()
    change = joined.heartbeat(regex="[a")
    return {
        "lookaround": join("(?=x)y"),
        "nested repeat": join("a**"),
        "backreference": join("(a)\\1"),
        "unclosed class": join("[a"),
        "repeat count": join("a{1001}"),
        "named group": join("(?<n>d-rxe)-.*"),
        "neither names nor regex": join(None),
        "heartbeat changes to an invalid regex": [
            plain(change.error_code, "error_code"),
            change.error_message,
        ],
        "still a member": _described_member(ctx, g, joined.member_id),
    }


@scenario(AREA)
def regex_switched_for_names(ctx: Ctx) -> Any:
    by_regex, by_name = ctx.create_topic("rxf1"), ctx.create_topic("rxf2")
    g = _group(ctx)
    m = RegexMember(ctx, g, f"d-rxf1-{ctx.token}", None)
    before = m.until([by_regex])
    described = _described_member(ctx, g)
    m.heartbeat(regex="", topics=[by_name])
    return {
        "before": before,
        "described before": described,
        "after": m.until([by_name]),
        "described after": _described_member(ctx, g),
    }


@scenario(AREA)
def regex_and_names_together(ctx: Ctx) -> Any:
    by_regex, by_name = ctx.create_topic("rxh1"), ctx.create_topic("rxh2")
    g = _group(ctx)
    m = RegexMember(ctx, g, f"d-rxh1-{ctx.token}", [by_name])
    return {"assigned": m.until([by_regex, by_name]), "describe": _described_member(ctx, g)}


@scenario(AREA)
def regex_internal_topics(ctx: Ctx) -> Any:
    """Whether a regex matches Kafka's internal topics (``__consumer_offsets``)."""
    t = ctx.create_topic("rxi")
    g = _group(ctx)
    m = RegexMember(ctx, g, f"__consumer_offsets|d-rxi-{ctx.token}", None)
    assigned = m.until([t], timeout_s=15)
    return {"assigned": assigned, "partitions": sorted(len(ps) for ps in m.owned.values())}


@scenario(AREA)
def regex_metadata_of_assigned_topic_ids(ctx: Ctx) -> Any:
    """What Java's consumer asks once a regex got it topics it has no metadata for: Metadata
    by topic id with an empty name."""
    t = ctx.create_topic("rxm", 2)
    resp = ctx.call(
        3,
        {
            "topics": [{"name": "", "topic_id": ctx.topic_id(t)}],
            "allow_auto_topic_creation": False,
        },
        version=12,
    )
    (topic,) = resp.topics
    return {
        "error": plain(topic.error_code, "error_code"),
        "name": topic.name,
        "partitions": len(topic.partitions),
    }
