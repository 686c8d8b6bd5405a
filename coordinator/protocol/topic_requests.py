"""What Kafka's controller checks in a CreateTopics or CreatePartitions request beyond one
topic's name and configs: names given twice, explicit replica assignments, partition counts
and replication factors.  Codes and messages as Apache Kafka 4.4 answers them (the
differential area ``topics``); every broker here is a single node, so an assignment is valid
only when each partition names that node once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Hashable, Sequence
from typing import TypeVar

from txn.errors import ErrorCode

Refusal = tuple[ErrorCode, str]
K = TypeVar("K", bound=Hashable)

#: Kafka's answer for every entry of a name given more than once in one request.
DUPLICATE: Refusal = (ErrorCode.INVALID_REQUEST, "Duplicate topic name.")


def duplicated(names: Sequence[K]) -> list[K]:
    """The names (or ids) given more than once, in the order they first appear."""
    counts = Counter(names)
    return list(dict.fromkeys(n for n in names if counts[n] > 1))


def replica_list_error(
    broker_ids: Sequence[int], brokers: Collection[int], expected: int | None
) -> str | None:
    """Kafka's ``validateManualPartitionAssignment``: one partition's replica list."""
    if not broker_ids:
        return "The manual partition assignment includes an empty replica list."
    previous: int | None = None
    for broker in sorted(broker_ids):
        if broker not in brokers:
            return (
                f"The manual partition assignment includes broker {broker}, but no such broker"
                " is registered."
            )
        if broker == previous:
            return f"The manual partition assignment includes the broker {broker} more than once."
        previous = broker
    if expected is not None and len(broker_ids) != expected:
        return (
            f"The manual partition assignment includes a partition with {len(broker_ids)}"
            " replica(s), but this is not consistent with previous partitions, which have"
            f" {expected} replica(s)."
        )
    return None


def assignment_refusal(
    assignments: Sequence[tuple[int, Sequence[int]]],
    num_partitions: int,
    replication_factor: int,
    brokers: Collection[int],
) -> Refusal | None:
    """A new topic's explicit assignments ((partition, replicas) as given)."""
    if replication_factor != -1:
        return (
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not set"
            " to -1.",
        )
    if num_partitions != -1:
        return (
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        )
    seen: set[int] = set()
    expected: int | None = None
    for index, broker_ids in assignments:
        if index in seen:
            return (
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Found multiple manual partition assignments for partition {index}",
            )
        seen.add(index)
        if (message := replica_list_error(broker_ids, brokers, expected)) is not None:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, message
        expected = len(broker_ids)
    if sorted(seen) != list(range(len(seen))):
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        )
    return None


def counts_refusal(num_partitions: int, replication_factor: int, brokers: int) -> Refusal | None:
    """A new topic's partition count and replication factor, the defaults applied (Kafka
    checks a non-positive factor first, the number of brokers last)."""
    if replication_factor <= 0:
        return (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if num_partitions <= 0:
        return (
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        )
    if replication_factor > brokers:
        return (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): The target"
            f" replication factor of {replication_factor} cannot be reached because only"
            f" {brokers} broker(s) are registered or some brokers have all their log"
            " directories cordoned.",
        )
    return None


def added_assignments_refusal(
    added: int, assignments: Sequence[Sequence[int]], brokers: Collection[int], replicas: int
) -> Refusal | None:
    """CreatePartitions' explicit assignments for ``added`` new partitions of a topic whose
    partitions have ``replicas`` replicas each."""
    if len(assignments) != added:
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Attempted to add {added} additional partition(s), but only {len(assignments)}"
            " assignment(s) were specified.",
        )
    for broker_ids in assignments:
        if (message := replica_list_error(broker_ids, brokers, replicas)) is not None:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, message
    return None
