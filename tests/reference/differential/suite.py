"""The suite: broker settings shared by both sides, the documented differences, the run."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from coordinator.launcher import LocalBroker
from tests.reference.differential import (  # noqa: F401 - registers the scenarios
    scenarios_authorized_ops,
    scenarios_compaction,
    scenarios_config_broker,
    scenarios_config_describe,
    scenarios_config_group,
    scenarios_config_loggers,
    scenarios_configs,
    scenarios_epochs,
    scenarios_groups,
    scenarios_internal,
    scenarios_interval,
    scenarios_malformed,
    scenarios_membership,
    scenarios_produce,
    scenarios_quotas,
    scenarios_regex,
    scenarios_share,
    scenarios_share_acquire,
    scenarios_share_dlq,
    scenarios_share_fidelity,
    scenarios_share_start,
    scenarios_timestamps,
    scenarios_tokens,
    scenarios_topics,
    scenarios_txn,
)
from tests.reference.differential.framework import REGISTRY, Outcome, run_all, table
from tests.reference.kafka import ReferenceKafka

#: Given to both brokers.  Kafka's own settings, lowered so that timing scenarios (record
#: locks, share sessions, transaction timeouts, retention) take a second instead of a minute.
SETTINGS: dict[str, str] = {
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.min.session.timeout.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "500",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    "log.initial.task.delay.ms": "1000",
    "log.retention.check.interval.ms": "1000",
    "log.cleaner.backoff.ms": "500",
    # the reference harness's partition counts of Kafka's internal topics
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "share.coordinator.state.topic.num.partitions": "3",
    "transaction.state.log.min.isr": "1",
}

#: Scenario -> why sharetxn's observation differs, kept because Kafka's behaviour is impossible
#: or harmful here.  Each reason names its section of docs/conformance.md ("Differential suite").
_INTERNAL = "internal topics: the coordinators' logs are not changed by clients"
KNOWN_DIFFERENCES: dict[str, str] = {
    "internal-topics/change_internal_topic_validate_only": _INTERNAL,
    "malformed/transactional_produce_with_idempotent_pid": "transactional batch, no transaction",
    "timestamps/list_offsets_max_after_delete_records": "MAX_TIMESTAMP below the log start",
    "share/alter_offsets_empty_group": "share offsets: Kafka keeps its cached state after alter",
    "share/auto_offset_reset_by_duration_zero": "by_duration with no recent record",
    "consumer-groups/regex_internal_topics": "regex subscriptions: internal topics not matched",
    "share/batch_size_zero": "BatchSize 0: Kafka answers an empty acquired range",
    "quotas/controller_mutation_quota_delete": "DeleteTopics over its quota: Kafka times out",
}

#: Scenario -> its open difference (issue 27: to be aligned with Kafka).  Reported as
#: "pending", not failed; each is listed in docs/conformance.md ("Differential suite", open
#: differences).  Remove an entry once its scenario is identical.
PENDING: dict[str, str] = {}


@contextlib.contextmanager
def brokers(kafka: str | None, sharetxn: str | None) -> Iterator[tuple[str, str]]:
    """The two bootstraps, starting whichever was not given."""
    with contextlib.ExitStack() as stack:
        if kafka is None:
            kafka = stack.enter_context(ReferenceKafka(settings=SETTINGS)).bootstrap_servers
        if sharetxn is None:
            sharetxn = stack.enter_context(LocalBroker(config=SETTINGS)).bootstrap_servers
        yield kafka, sharetxn


def select(names: Sequence[str] | None = None, contains: str = "") -> list[str]:
    chosen = list(names) if names else sorted(REGISTRY)
    return [n for n in chosen if contains in n]


def run_suite(
    kafka: str | None,
    sharetxn: str | None,
    names: Sequence[str] | None = None,
    contains: str = "",
) -> tuple[list[Outcome], str]:
    with brokers(kafka, sharetxn) as (k, s):
        outcomes = run_all(k, s, KNOWN_DIFFERENCES, pending=PENDING, names=select(names, contains))
    return outcomes, table(outcomes)
