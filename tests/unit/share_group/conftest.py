"""Fixtures for the share-group tests."""

from __future__ import annotations

import pytest

from tests.unit.share_group.group_bench import Bench


@pytest.fixture
def bench() -> Bench:
    """A share-group coordinator with the topic "foo" of two partitions."""
    b = Bench()
    b.create_topic("foo", 2)
    return b
