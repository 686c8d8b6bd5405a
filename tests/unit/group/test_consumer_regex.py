"""KIP-848 regex subscriptions (``SubscribedTopicRegex``) on a manual clock, as Kafka 4.4."""

from __future__ import annotations

from collections.abc import Callable

from coordinator.assembly import consumer_group_coordinator
from coordinator.group.consumer_protocol import ConsumerHeartbeatResult
from coordinator.group.consumer_records import REGULAR_EXPRESSION, ConsumerKey, RegexValue
from coordinator.group.consumer_regex import BATCH_REFRESH_MIN_INTERVAL_MS
from coordinator.group.coordinator import ConsumerGroupCoordinator
from coordinator.group.shard import GroupRecordCodec
from tests.unit.group.orders_bench import OrdersBench
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.txn_log import read_records

E = ErrorCode
G = "cg"


class Bench(OrdersBench):
    def new(self) -> ConsumerGroupCoordinator:
        coord = consumer_group_coordinator(
            self.clock,
            BrokerConfig(self.broker_config()),
            self.log,
            topics=self.topics,
            topic_catalog=self.topics,
        )
        coord.load()
        return coord

    def beat(
        self,
        member: str,
        epoch: int,
        regex: str | None = None,
        topics: list[str] | None = None,
        may_describe: Callable[[str], bool] | None = None,
    ) -> ConsumerHeartbeatResult:
        return self.coord.consumer_heartbeat(
            G,
            member,
            epoch,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=topics,
            subscribed_topic_regex=regex,
            may_describe=may_describe,
            client_id="c",
            client_host="/h",
        )

    def resolve(self) -> None:
        """Run what is due now: a scheduled resolution."""
        self.clock.advance(0)

    def regex_records(self) -> dict[str, RegexValue | None]:
        out: dict[str, RegexValue | None] = {}
        codec = GroupRecordCodec()
        for header, raw in self.log.batches(0):
            if header.is_control:
                continue
            for key, value in read_records(raw):
                k, v = codec.decode(key, value)
                if isinstance(k, ConsumerKey) and k.version == REGULAR_EXPRESSION:
                    assert k.member_id is not None
                    assert v is None or isinstance(v, RegexValue)
                    out[k.member_id] = v
        return out

    def group(self):  # type: ignore[no-untyped-def]
        ((_gid, _error, group),) = self.coord.describe_consumer_protocol([G])
        assert group is not None
        return group


def owned(result: ConsumerHeartbeatResult) -> set[tuple[str, int]]:
    assert result.assignment is not None
    return {(str(t), p) for t, ps in result.assignment.items() for p in ps}


def test_a_regex_is_resolved_after_the_heartbeat_then_assigned() -> None:
    b = Bench()
    b.topics.create("payments", 1, 0)
    first = b.beat("m1", 0, regex="ord.*")
    assert first.error is E.NONE and first.member_epoch == 2
    assert first.assignment == {}  # not resolved yet: nothing to assign
    b.resolve()
    assert b.group().epoch == 3  # the resolution matched a topic: a new epoch
    assert b.group().resolved["ord.*"].topics == ("orders",)
    second = b.beat("m1", 2)
    assert second.member_epoch == 3 and len(owned(second)) == 4
    member = b.group().members["m1"]
    assert member.regex == "ord.*" and member.subscribed == frozenset()


def test_an_invalid_regex_is_refused_as_kafka_words_it() -> None:
    b = Bench()
    r = b.beat("m1", 0, regex="(?=x)y")
    assert r.error is E.INVALID_REGULAR_EXPRESSION
    assert r.error_message == (
        "SubscribedTopicRegex `(?=x)y` is not a valid regular expression: "
        "invalid or unsupported Perl syntax."
    )
    assert b.coord.describe_consumer_protocol([G])[0][1] is E.GROUP_ID_NOT_FOUND
    joined = b.beat("m1", 0, regex="ord.*")
    bad = b.beat("m1", joined.member_epoch, regex="a**")
    assert bad.error is E.INVALID_REGULAR_EXPRESSION
    assert b.group().members["m1"].regex == "ord.*"


def test_a_join_needs_names_or_a_regex() -> None:
    b = Bench()
    r = b.beat("m1", 0)
    assert r.error is E.INVALID_REQUEST
    assert r.error_message == (
        "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
    )
    assert b.beat("m1", 0, regex="").error is E.NONE  # an empty regex: subscribed to nothing


def test_a_topic_created_later_is_matched_at_the_next_heartbeat_after_ten_seconds() -> None:
    b = Bench()
    r = b.beat("m1", 0, regex="ord.*")
    b.resolve()
    r = b.beat("m1", r.member_epoch)
    assert len(owned(r)) == 4
    b.topics.create("orders-eu", 2, b.clock.now_ms())
    r = b.beat("m1", r.member_epoch)  # within 10 s of the resolution: not yet
    b.resolve()
    assert b.group().resolved["ord.*"].topics == ("orders",)
    b.clock.advance(BATCH_REFRESH_MIN_INTERVAL_MS + 1)
    r = b.beat("m1", r.member_epoch)
    b.resolve()
    assert b.group().resolved["ord.*"].topics == ("orders", "orders-eu")
    r = b.beat("m1", r.member_epoch)
    assert r.member_epoch == 4 and len(owned(r)) == 6


def test_a_deleted_topic_leaves_the_assignment() -> None:
    b = Bench()
    b.topics.create("orders-eu", 2, 0)
    r = b.beat("m1", 0, regex="orders.*")
    b.resolve()
    r = b.beat("m1", r.member_epoch)
    assert len(owned(r)) == 6
    b.topics.delete("orders-eu", b.clock.now_ms())
    r = b.beat("m1", r.member_epoch)
    assert b.group().epoch == 4 and len(owned(r)) == 4  # the rest is revoked
    # the resolution still names it until the next one
    assert b.group().resolved["orders.*"].topics == ("orders", "orders-eu")


def test_the_refresh_interval_resolves_again() -> None:
    b = Bench()
    b.broker_config = lambda: {"group.consumer.regex.refresh.interval.ms": "20000"}  # type: ignore[method-assign]
    b.coord = b.new()
    r = b.beat("m1", 0, regex="ord.*")
    b.resolve()
    first = b.group().resolved["ord.*"]
    b.clock.advance(BATCH_REFRESH_MIN_INTERVAL_MS + 1)
    r = b.beat("m1", r.member_epoch)
    b.resolve()
    assert b.group().resolved["ord.*"] == first  # no new topic, interval not passed
    b.clock.advance(10_000)
    b.beat("m1", r.member_epoch)
    b.resolve()
    again = b.group().resolved["ord.*"]
    assert again.timestamp > first.timestamp and again.topics == first.topics
    assert b.group().epoch == 3  # same topics: no new epoch


def test_a_resolved_regex_is_a_new_epoch_at_once_for_another_member() -> None:
    b = Bench()
    r1 = b.beat("m1", 0, regex="ord.*")
    b.resolve()
    b.beat("m1", r1.member_epoch)
    r2 = b.beat("m2", 0, regex="ord.*")
    assert r2.member_epoch == 4 and b.group().epoch == 4


def test_the_last_member_of_a_regex_leaves_its_tombstone() -> None:
    b = Bench()
    b.beat("m1", 0, regex="ord.*")
    b.resolve()
    r2 = b.beat("m2", 0, regex="o.*")
    b.resolve()
    assert set(b.group().resolved) == {"ord.*"}  # within 10 s of the last resolution
    b.clock.advance(BATCH_REFRESH_MIN_INTERVAL_MS + 1)
    r2 = b.beat("m2", r2.member_epoch)
    b.resolve()
    assert set(b.group().resolved) == {"ord.*", "o.*"}
    b.beat("m2", r2.member_epoch, regex="")  # drops its regex
    assert set(b.group().resolved) == {"ord.*"}
    assert b.regex_records()["o.*"] is None
    b.beat("m1", -1)
    assert b.regex_records()["ord.*"] is None
    assert b.group().resolved == {}


def test_a_restart_keeps_regexes_and_their_resolution() -> None:
    b = Bench()
    r = b.beat("m1", 0, regex="ord.*")
    b.resolve()
    r = b.beat("m1", r.member_epoch)
    b.coord = b.new()
    group = b.group()
    assert group.members["m1"].regex == "ord.*"
    assert group.members["m1"].regex_topics == frozenset({"orders"})
    assert group.resolved["ord.*"].topics == ("orders",)
    again = b.beat("m1", r.member_epoch)
    assert again.error is E.NONE and again.member_epoch == r.member_epoch


def test_topics_the_principal_may_not_describe_are_left_out() -> None:
    b = Bench()
    b.topics.create("orders-secret", 1, 0)
    r = b.beat("m1", 0, regex="orders.*", may_describe=lambda t: t != "orders-secret")
    b.resolve()
    assert b.group().resolved["orders.*"].topics == ("orders",)
    assert len(owned(b.beat("m1", r.member_epoch))) == 4


def test_names_and_a_regex_together() -> None:
    b = Bench()
    b.topics.create("payments", 2, 0)
    r = b.beat("m1", 0, regex="pay.*", topics=["orders"])
    assert len(owned(r)) == 4
    b.resolve()
    r = b.beat("m1", r.member_epoch)
    assert len(owned(r)) == 6


def test_a_rejoin_keeps_what_it_leaves_out() -> None:
    b = Bench()
    b.topics.create("payments", 1, 0)
    b.beat("m1", 0, regex="pay.*", topics=["orders"])
    b.resolve()
    b.beat("m1", 0, topics=["orders"])  # epoch 0 again: the regex stays
    assert b.group().members["m1"].regex == "pay.*"
    b.beat("m1", 0, regex="ord.*")  # and so do the names
    member = b.group().members["m1"]
    assert member.regex == "ord.*" and member.subscribed == frozenset({"orders"})
