"""Admin operations: describe, list, delete, and dynamic group configs (seed 002)."""

from __future__ import annotations

import pytest

from coordinator.share.group_config import BROKER_BOUND_DEFAULTS, ShareGroupConfig
from coordinator.share.group_model import HeartbeatRequest
from tests.unit.share_group.group_bench import GROUP, INTERVAL, Bench, E

# --- describe / list --------------------------------------------------------------------------


def test_describe_a_stable_group(bench: Bench) -> None:
    foo = bench.topic_id("foo")
    bench.join("m1", ["foo"])
    bench.coordinator.heartbeat(
        HeartbeatRequest(GROUP, "m1", 2, "r1", None, client_id="cid", client_host="/1.2.3.4")
    )
    bench.initialize_all()
    bench.settle()
    (desc,) = bench.coordinator.describe([GROUP])
    assert (desc.error, desc.group_state, desc.assignor_name) == (E.NONE, "Stable", "simple")
    assert (desc.group_epoch, desc.assignment_epoch) == (3, 3)
    (member,) = desc.members
    assert (member.member_id, member.rack_id, member.client_id, member.client_host) == (
        "m1",
        "r1",
        "cid",
        "/1.2.3.4",
    )
    assert member.member_epoch == 3
    assert member.subscribed_topic_names == ("foo",)
    assert [(a.topic_id, a.topic_name, a.partitions) for a in member.assignment] == [
        (foo, "foo", (0, 1))
    ]


def test_describe_unknown_group_is_dead(bench: Bench) -> None:
    (desc,) = bench.coordinator.describe(["nope"])
    assert (desc.error, desc.group_state) == (E.GROUP_ID_NOT_FOUND, "Dead")
    assert desc.error_message == "Group nope not found."


def test_list_groups_filters_by_state_and_type(bench: Bench) -> None:
    bench.join("m1", ["foo"], group_id="busy")
    bench.join("m2", ["foo"], group_id="idle")
    bench.coordinator.heartbeat(HeartbeatRequest("idle", "m2", -1, None, None))
    listing = bench.coordinator.list_groups()
    assert [(g.group_id, g.group_state, g.group_type) for g in listing] == [
        ("busy", "Stable", "share"),
        ("idle", "Empty", "share"),
    ]
    assert [g.group_id for g in bench.coordinator.list_groups(states=["empty"])] == ["idle"]
    assert [g.group_id for g in bench.coordinator.list_groups(types=["Share"])] == ["busy", "idle"]
    assert bench.coordinator.list_groups(types=["consumer"]) == []


# --- delete -----------------------------------------------------------------------------------


def test_delete_groups(bench: Bench) -> None:
    bench.join("m1", ["foo"], group_id="busy")
    bench.join("m2", ["foo"], group_id="idle")
    bench.coordinator.heartbeat(HeartbeatRequest("idle", "m2", -1, None, None))
    result = bench.coordinator.delete_groups(["busy", "idle", "nope"])
    assert result == {
        "busy": E.NON_EMPTY_GROUP,
        "idle": E.NONE,
        "nope": E.GROUP_ID_NOT_FOUND,
    }
    assert bench.coordinator.group("idle") is None
    assert bench.coordinator.group("busy") is not None
    assert bench.coordinator.delete_groups(["idle"]) == {"idle": E.GROUP_ID_NOT_FOUND}


def test_deleted_group_starts_again_at_epoch_one(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m1", -1, None, None))
    bench.coordinator.delete_groups([GROUP])
    assert bench.join("m1", ["foo"]).member_epoch == 2  # epoch 1, then the join


# --- configs ----------------------------------------------------------------------------------


def test_describe_configs_defaults() -> None:
    bench = Bench(overrides={INTERVAL: 1000})  # the broker's default
    assert bench.coordinator.describe_group_configs(GROUP) == {
        "consumer.session.timeout.ms": ("45000", True),
        "consumer.heartbeat.interval.ms": ("5000", True),
        "share.session.timeout.ms": ("45000", True),
        "share.heartbeat.interval.ms": ("5000", True),
        "share.record.lock.duration.ms": ("30000", True),
        "share.delivery.count.limit": ("5", True),
        "share.auto.offset.reset": ("latest", True),
        "share.isolation.level": ("read_uncommitted", True),
        "share.partition.max.record.locks": ("2000", True),
        "consumer.assignment.interval.ms": ("1000", True),
        "share.assignment.interval.ms": ("1000", True),
        "errors.deadletterqueue.topic.name": ("", True),
        "share.renew.acknowledge.enable": ("true", True),
        "errors.deadletterqueue.copy.record.enable": ("false", True),
        "streams.session.timeout.ms": ("45000", True),
        "streams.heartbeat.interval.ms": ("5000", True),
        "streams.num.standby.replicas": ("0", True),
        "streams.initial.rebalance.delay.ms": ("3000", True),
        "streams.assignment.interval.ms": ("1000", True),
        "streams.assignor.name": ("sticky", True),
        "streams.rack.aware.assignment.tags": ("", True),
    }


def test_kafka_44_group_configs_are_stored_as_kafka_parses_them(bench: Bench) -> None:
    error, _ = bench.coordinator.alter_group_configs(
        GROUP,
        {
            "share.renew.acknowledge.enable": "FALSE",
            "errors.deadletterqueue.topic.name": " dlq ",
            "share.partition.max.record.locks": " 150 ",
            "consumer.assignor.offload.enable": "False",
        },
        [],
        False,
    )
    assert error is E.NONE
    configs = bench.coordinator.describe_group_configs(GROUP)
    assert configs["share.renew.acknowledge.enable"] == ("false", False)
    assert configs["errors.deadletterqueue.topic.name"] == ("dlq", False)
    assert configs["share.partition.max.record.locks"] == ("150", False)
    # An internal config (Kafka's GroupConfig.isInternal) is listed once set.
    assert configs["consumer.assignor.offload.enable"] == ("false", False)
    assert "share.assignor.offload.enable" not in configs
    assert bench.coordinator.group_config(GROUP).partition_max_record_locks == 150


def test_alter_configs_set_and_delete() -> None:
    bench = Bench(overrides={INTERVAL: 1000})  # the broker's default
    bench.create_topic("foo", 2)
    coordinator = bench.coordinator
    error, message = coordinator.alter_group_configs(
        GROUP,
        {
            "share.record.lock.duration.ms": "20000",
            "share.heartbeat.interval.ms": 10000,
            "share.auto.offset.reset": "earliest",
            "share.isolation.level": "read_committed",
            "share.delivery.count.limit": "3",
        },
        [],
        False,
    )
    assert (error, message) == (E.NONE, None)
    # As Kafka's validator, the strategy names are case-sensitive.
    upper, _ = coordinator.alter_group_configs(
        GROUP, {"share.auto.offset.reset": "EARLIEST"}, [], False
    )
    assert upper is E.INVALID_CONFIG
    configs = coordinator.describe_group_configs(GROUP)
    assert configs["share.record.lock.duration.ms"] == ("20000", False)
    assert configs["share.auto.offset.reset"] == ("earliest", False)
    assert configs["share.session.timeout.ms"] == ("45000", True)
    effective = coordinator.group_config(GROUP)
    assert effective == ShareGroupConfig(45000, 10000, 20000, 3, "earliest", "read_committed")
    assert bench.config_changes == [(GROUP, effective)]
    # The heartbeat interval reaches the members.
    assert bench.join("m1", ["foo"]).heartbeat_interval_ms == 10000

    error, _ = coordinator.alter_group_configs(GROUP, {}, ["share.heartbeat.interval.ms"], False)
    assert error is E.NONE
    assert coordinator.describe_group_configs(GROUP)["share.heartbeat.interval.ms"] == (
        "5000",
        True,
    )


def test_by_duration_auto_offset_reset(bench: Bench) -> None:
    error, _ = bench.coordinator.alter_group_configs(
        GROUP, {"share.auto.offset.reset": "by_duration:PT1H30M"}
    )
    assert error is E.NONE
    effective = bench.coordinator.group_config(GROUP)
    assert effective.auto_offset_reset == "by_duration:PT1H30M"
    assert effective.auto_offset_reset_strategy == "by_duration"
    assert effective.auto_offset_reset_duration_ms == 90 * 60 * 1000


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        (
            "share.record.lock.duration.ms",
            "14999",
            "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.",
        ),
        (
            "share.record.lock.duration.ms",
            "60001",
            "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.",
        ),
        (
            "share.session.timeout.ms",
            "44999",
            "share.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
        ),
        (
            "share.session.timeout.ms",
            "60001",
            "share.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
        ),
        (
            "share.heartbeat.interval.ms",
            "4999",
            "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
        ),
        (
            "share.heartbeat.interval.ms",
            "15001",
            "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
        ),
        (
            "share.delivery.count.limit",
            "11",
            "share.delivery.count.limit must be in the range 2 to 10 inclusive.",
        ),
        ("share.session.timeout.ms", "1.5", "Not a number of type INT"),
        ("share.isolation.level", "READ_COMMITTED", "read_committed"),
        ("share.auto.offset.reset", "none", "by_duration:<PnDTnHnMn.nS>"),
        ("share.auto.offset.reset", "by_duration:-PT1H", "Invalid value `by_duration:-PT1H`"),
        ("share.auto.offset.reset", "by_duration:1h", "Invalid value `by_duration:1h`"),
        ("share.session.timeout.ms", "-1", "Value must be at least 1"),
        ("consumer.session.timeout.ms", "44999", "must be in the range 45000 to 60000"),
        ("consumer.heartbeat.interval.ms", "15001", "must be in the range 5000 to 15000"),
        ("consumer.assignment.interval.ms", "15001", "must be in the range 0 to 15000"),
        ("share.assignment.interval.ms", "-1", "Value must be at least 0"),
        ("share.partition.max.record.locks", "99", "Value must be at least 100"),
        ("share.partition.max.record.locks", "4001", "must be in the range 100 to 4000"),
        (
            "share.renew.acknowledge.enable",
            "yes",
            "Invalid value yes for configuration share.renew.acknowledge.enable: Expected value"
            " to be either true or false",
        ),
        ("errors.deadletterqueue.copy.record.enable", "1", "either true or false"),
        ("streams.session.timeout.ms", "44999", "must be in the range 45000 to 60000"),
        ("streams.num.standby.replicas", "3", "must be less than or equal to 2"),
        ("streams.assignor.name", "range", "'range' is not a registered task assignor"),
        ("streams.rack.aware.assignment.tags", "a,,b", "values must not be empty"),
        ("streams.bogus", "1", "Unknown group config name: streams.bogus"),
        ("share.bogus", "1", "Unknown group config name: share.bogus"),
    ],
)
def test_invalid_configs_are_rejected_with_a_clear_message(
    bench: Bench, name: str, value: str, fragment: str
) -> None:
    end = bench.log.log_end_offset
    error, message = bench.coordinator.alter_group_configs(GROUP, {name: value}, [], False)
    assert error is E.INVALID_CONFIG
    assert message is not None and fragment in message
    assert bench.log.log_end_offset == end  # nothing written
    assert bench.coordinator.describe_group_configs(GROUP)["share.session.timeout.ms"] == (
        "45000",
        True,
    )


def test_deleting_an_unknown_config_is_invalid(bench: Bench) -> None:
    error, message = bench.coordinator.alter_group_configs(GROUP, {}, ["share.nope"], False)
    assert error is E.INVALID_CONFIG
    assert message == "Unknown group config name: share.nope"


def test_set_and_delete_of_the_same_key_is_an_invalid_request(bench: Bench) -> None:
    error, _ = bench.coordinator.alter_group_configs(
        GROUP, {"share.isolation.level": "read_committed"}, ["share.isolation.level"], False
    )
    assert error is E.INVALID_REQUEST


def test_validate_only_writes_nothing(bench: Bench) -> None:
    end = bench.log.log_end_offset
    error, _ = bench.coordinator.alter_group_configs(
        GROUP, {"share.isolation.level": "read_committed"}, [], True
    )
    assert error is E.NONE
    assert bench.log.log_end_offset == end
    assert not bench.coordinator.group_config(GROUP).read_committed
    assert bench.config_changes == []


def test_broker_bounds_come_from_the_broker_config() -> None:
    bench = Bench(overrides={"group.share.record.lock.duration.ms": 20000})
    assert bench.coordinator.describe_group_configs(GROUP)["share.record.lock.duration.ms"] == (
        "20000",
        True,
    )
    assert BROKER_BOUND_DEFAULTS["group.share.max.record.lock.duration.ms"] == 60000


def test_configs_survive_group_deletion(bench: Bench) -> None:
    bench.coordinator.alter_group_configs(GROUP, {"share.isolation.level": "read_committed"})
    bench.join("m1", ["foo"])
    bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m1", -1, None, None))
    bench.coordinator.delete_groups([GROUP])
    assert bench.coordinator.group_config(GROUP).read_committed


def test_consumer_group_timing_follows_its_group_configs(bench: Bench) -> None:
    coordinator = bench.coordinator
    assert coordinator.consumer_timing(GROUP) == (45000, 5000)
    error, _ = coordinator.alter_group_configs(
        GROUP,
        {"consumer.heartbeat.interval.ms": "7000", "consumer.session.timeout.ms": "50000"},
        [],
        False,
    )
    assert error is E.NONE
    assert coordinator.consumer_timing(GROUP) == (50000, 7000)
    assert coordinator.describe_group_configs(GROUP)["consumer.heartbeat.interval.ms"] == (
        "7000",
        False,
    )
    coordinator.alter_group_configs(GROUP, {}, ["consumer.heartbeat.interval.ms"], False)
    assert coordinator.consumer_timing(GROUP) == (50000, 5000)
