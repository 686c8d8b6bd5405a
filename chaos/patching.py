"""Run-time patches of the product, applied by the harness (never flags in the product code).

A ``Patch`` replaces attributes of product classes for the duration of a run.  Two kinds use
it: *mutations* (``chaos.mutations``: seeded protocol bugs the checker must catch) and
*assumed fixes* (``chaos.known_bugs``: stand-ins for fixes of product bugs the harness found,
so the rest of the protocol stays under test until the real fix lands).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock


@dataclass(frozen=True, slots=True)
class Patch:
    name: str
    description: str
    install: Callable[[ExitStack], None]
    # What should catch it / what it breaks (for reports).
    invariants: tuple[str, ...] = ()


def replace(stack: ExitStack, target: Any, attribute: str, new: Any) -> None:
    """Set ``target.attribute = new`` until the stack closes."""
    stack.enter_context(mock.patch.object(target, attribute, new))


@contextmanager
def applied(patches: Iterable[Patch]) -> Iterator[None]:
    with ExitStack() as stack:
        for patch in patches:
            patch.install(stack)
        yield
