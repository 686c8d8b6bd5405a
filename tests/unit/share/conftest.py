"""Fixtures for the share tests."""

from __future__ import annotations

import pytest

from tests.unit.share.coordinator_bench import Bench


@pytest.fixture
def bench() -> Bench:
    return Bench()
