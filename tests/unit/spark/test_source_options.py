"""The kafka-share options: Spark's names, sharetxn's older names as aliases, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from producer.spark.errors import SparkConfigError
from producer.spark.options import SourceOptions


def parse(tmp_path: Path, **options: str) -> SourceOptions:
    base = {"kafka.bootstrap.servers": "h:1", "checkpointLocation": str(tmp_path / "chk")}
    return SourceOptions.parse({**base, **options})


def spark_names(tmp_path: Path, **extra: str) -> SourceOptions:
    return parse(
        tmp_path,
        **{
            "kafka.share.group.id": "g",
            "subscribePattern": r"orders-\d+",
            "includeHeaders": "true",
            **extra,
        },
    )


def test_the_names_of_sparks_proposed_share_source(tmp_path: Path) -> None:
    opts = spark_names(tmp_path, **{"kafka.share.parallelism": "3"})
    assert opts.group_id == "g"
    assert (opts.topics, opts.topic_pattern) == ((), r"orders-\d+")
    assert opts.include_headers is True
    assert opts.num_partitions == 3


def test_sharetxn_names_still_work_and_headers_stay_off_by_default(tmp_path: Path) -> None:
    opts = parse(tmp_path, **{"group.id": "g", "subscribe": "a, b", "numPartitions": "2"})
    assert (opts.group_id, opts.topics, opts.topic_pattern) == ("g", ("a", "b"), None)
    assert (opts.num_partitions, opts.include_headers) == (2, False)


def test_spark_passes_the_keys_in_lower_case(tmp_path: Path) -> None:
    opts = parse(
        tmp_path,
        **{"kafka.share.group.id": "g", "subscribepattern": "t.*", "includeheaders": "TRUE"},
    )
    assert (opts.group_id, opts.topic_pattern, opts.include_headers) == ("g", "t.*", True)


def test_an_option_and_its_alias_must_agree(tmp_path: Path) -> None:
    same = spark_names(tmp_path, **{"group.id": "g"})
    assert same.group_id == "g"
    with pytest.raises(SparkConfigError, match=r"'kafka\.share\.group\.id'='g' and 'group\.id'="):
        spark_names(tmp_path, **{"group.id": "other"})
    with pytest.raises(SparkConfigError, match=r"'kafka\.share\.parallelism'.*'numPartitions'"):
        spark_names(tmp_path, **{"kafka.share.parallelism": "2", "numPartitions": "4"})
    with pytest.raises(SparkConfigError, match=r"option 'numPartitions' must be a positive"):
        spark_names(tmp_path, numPartitions="0")


def test_a_group_id_is_required_under_either_name(tmp_path: Path) -> None:
    with pytest.raises(SparkConfigError, match=r"'kafka\.share\.group\.id' \(or 'group\.id'\)"):
        parse(tmp_path, subscribe="t")
    with pytest.raises(SparkConfigError, match=r"'group\.id' is required"):
        parse(tmp_path, subscribe="t", **{"group.id": " "})


def test_one_subscription_a_valid_pattern(tmp_path: Path) -> None:
    with pytest.raises(SparkConfigError, match="'subscribe' and 'subscribePattern', not both"):
        spark_names(tmp_path, subscribe="t")
    with pytest.raises(SparkConfigError, match=r"'subscribe'.*or 'subscribePattern'.*required"):
        parse(tmp_path, **{"kafka.share.group.id": "g"})
    with pytest.raises(SparkConfigError, match="not a regular expression"):
        spark_names(tmp_path, subscribePattern="orders-(")
    with pytest.raises(SparkConfigError, match="includeHeaders' must be true or false"):
        spark_names(tmp_path, includeHeaders="yes")


def test_a_pattern_matches_whole_names_and_never_internal_topics(tmp_path: Path) -> None:
    opts = spark_names(tmp_path)
    names = ["orders-1", "orders-12", "orders-1-dlq", "xorders-2", "orders-", "__orders-3"]
    assert opts.matching(names) == ("orders-1", "orders-12")
    listed = parse(tmp_path, **{"group.id": "g", "subscribe": "b,a"})
    assert listed.matching(names) == ("b", "a")  # subscribe: its topics, as given


@pytest.mark.parametrize(
    ("option", "reason"),
    [
        ("assign", "subscribes to topics"),
        ("failOnDataLoss", "no query offsets to lose"),
        ("maxOffsetsPerTrigger", "kafka.share.parallelism x maxRecordsPerPartition"),
        ("kafka.group.id", "kafka.share.group.id"),
        ("kafka.share.exactly.once.strategy", "exactly once"),
        ("kafka.share.lock.timeout.ms", "share.record.lock.duration.ms"),
    ],
)
def test_options_of_sparks_kafka_sources_this_one_refuses_say_why(
    tmp_path: Path, option: str, reason: str
) -> None:
    with pytest.raises(SparkConfigError, match=rf"'{option}' is not supported: .*{reason}"):
        spark_names(tmp_path, **{option.lower(): "x"})


def test_an_unknown_option_is_refused_with_the_list(tmp_path: Path) -> None:
    with pytest.raises(SparkConfigError, match=r"unknown option 'maxRecords'.*subscribePattern"):
        spark_names(tmp_path, maxRecords="5")


def test_by_default_one_read_task_takes_what_the_group_can_lock(tmp_path: Path) -> None:
    opts = parse(tmp_path, **{"group.id": "g", "subscribe": "a"})
    assert (opts.max_records, opts.num_partitions) == (None, None)
    assert opts.task_count(3) == 1
    assert opts.records_per_task(3, 1) == 30_000  # 10,000 in flight per partition
    assert opts.records_per_task(1, 1) == 10_000
    assert opts.records_per_task(50, 1) == 100_000  # bounded
    assert opts.records_per_task(3, 6) == 10_000  # at least 10,000 a task


def test_at_least_once_splits_over_the_partitions_and_given_options_win(tmp_path: Path) -> None:
    held = parse(tmp_path, **{"group.id": "g", "subscribe": "a"}, deliverySemantics="at-least-once")
    assert held.task_count(3) == 3
    given = parse(
        tmp_path,
        **{"group.id": "g", "subscribe": "a"},
        numPartitions="2",
        maxRecordsPerPartition="7",
    )
    assert (given.task_count(3), given.records_per_task(3, 2)) == (2, 7)
