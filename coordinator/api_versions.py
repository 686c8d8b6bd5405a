"""The API versions this broker serves: exactly what is implemented."""

from __future__ import annotations

from typing import Final

# api key -> (name, min version, max version)
SUPPORTED: Final[dict[int, tuple[str, int, int]]] = {
    0: ("Produce", 3, 10),
    1: ("Fetch", 4, 16),
    2: ("ListOffsets", 1, 7),
    3: ("Metadata", 0, 12),
    10: ("FindCoordinator", 0, 6),
    18: ("ApiVersions", 0, 3),
    19: ("CreateTopics", 2, 7),
    20: ("DeleteTopics", 1, 6),
    21: ("DeleteRecords", 0, 2),
    22: ("InitProducerId", 0, 6),
    24: ("AddPartitionsToTxn", 0, 5),
    26: ("EndTxn", 0, 5),
    32: ("DescribeConfigs", 1, 4),
    37: ("CreatePartitions", 0, 3),
    60: ("DescribeCluster", 0, 1),
    61: ("DescribeProducers", 0, 0),
    65: ("DescribeTransactions", 0, 0),
    66: ("ListTransactions", 0, 1),
}


def is_supported(api_key: int, api_version: int) -> bool:
    entry = SUPPORTED.get(api_key)
    return entry is not None and entry[1] <= api_version <= entry[2]
