"""Every seeded protocol bug is caught within a bounded number of seeds.

Each test stops at the first seed that reports a violation (a failure names the mutation and
the seed); ``sharetxn chaos mutants`` prints the seeds-to-detection of all of them.
"""

from __future__ import annotations

import pytest

from chaos.known_bugs import KNOWN_BUGS
from chaos.mutations import MUTATIONS
from chaos.runner import RunOptions, run_options

pytestmark = pytest.mark.chaos

MAX_SEEDS = 100
OPS = 2000


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_is_caught(name: str) -> None:
    options = RunOptions(tuple(KNOWN_BUGS), name)
    for seed in range(1, MAX_SEEDS + 1):
        result = run_options(seed, OPS, options)
        if not result.ok:
            found = {v.invariant for v in result.violations}
            expected = set(MUTATIONS[name].invariants)
            assert found & expected, (
                f"{name} caught at seed {seed} by {found}, expected one of {expected}"
            )
            return
    pytest.fail(f"mutation {name} survived {MAX_SEEDS} seeds")
