"""How many partitions one request, and the broker as a whole, may create.

Every partition is a log, with memory and files of its own, so a request asking for tens of
thousands of them would weigh on the whole broker.  Kafka's controller refuses such requests
whole, before anything is created; its limits and messages are used
here:

* ``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``: CreateTopics asking for more than
  10,000 partitions in total (``num_partitions`` -1 counts the default) is answered
  POLICY_VIOLATION "Excessively large number of partitions per request." on every topic;
* ``QuorumController.MAX_RECORDS_PER_USER_OP``: CreateTopics whose metadata records (a topic
  record, one per partition, one per config) exceed 10,000 fails its ``BoundedList`` and is
  answered POLICY_VIOLATION "Unable to perform excessively large batch operation." on every
  topic (one topic of exactly 10,000 partitions is refused so);
* CreatePartitions adding more than 10,000 partitions over all its topics is answered
  POLICY_VIOLATION "Excessively large number of additional partitions per request." on every
  topic, unknown ones included (CreatePartitions to 32,767 is refused so).

Messages and boundaries as Apache Kafka 4.4 answered them (the reference harness).

sharetxn adds a limit on all client partitions together (``sharetxn.max.partitions``),
answered POLICY_VIOLATION for the topic that would pass it.  Open files do not bound it:
segment files are opened on demand through a bounded cache (``coordinator.log.handles``), so a
broker opens its own data directory again whatever the open-file limit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from txn.errors import ErrorCode

MAX_PARTITIONS_PER_BATCH: Final = 10_000
MAX_RECORDS_PER_USER_OP: Final = 10_000
EXCESSIVE_PARTITIONS: Final = "Excessively large number of partitions per request."
EXCESSIVE_BATCH: Final = "Unable to perform excessively large batch operation."
EXCESSIVE_ADDITIONAL: Final = "Excessively large number of additional partitions per request."

Refusal = tuple[ErrorCode, str]


def create_topics_refusal(
    requested: Iterable[tuple[int, int]], default_partitions: int
) -> Refusal | None:
    """Kafka's refusal of a whole CreateTopics request, given (num_partitions, configs) per topic.

    The partition count is ``validateTotalNumberOfPartitions``; the record count is the
    controller's bound on one operation's records (a topic record, its partition records and
    its config records).
    """
    partitions = 0
    records = 0
    for num_partitions, configs in requested:
        count = default_partitions if num_partitions == -1 else max(num_partitions, 0)
        partitions += count
        if count > 0:
            records += 1 + count + configs
    if partitions > MAX_PARTITIONS_PER_BATCH:
        return ErrorCode.POLICY_VIOLATION, EXCESSIVE_PARTITIONS
    if records > MAX_RECORDS_PER_USER_OP:
        return ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH
    return None


def create_partitions_refusal(added: Iterable[int]) -> Refusal | None:
    """Kafka's refusal of a whole CreatePartitions request, given the partitions each existing
    topic would add."""
    if sum(max(count, 0) for count in added) > MAX_PARTITIONS_PER_BATCH:
        return ErrorCode.POLICY_VIOLATION, EXCESSIVE_ADDITIONAL
    return None


def total_partitions_refusal(existing: int, adding: int, limit: int) -> Refusal | None:
    """sharetxn's refusal of partitions beyond the broker's total (``sharetxn.max.partitions``)."""
    if existing + adding <= limit:
        return None
    return (
        ErrorCode.POLICY_VIOLATION,
        f"The broker holds {existing} partitions; {adding} more would exceed its limit of "
        f"{limit} (sharetxn.max.partitions).",
    )
