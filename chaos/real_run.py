"""What the real-process chaos modes (``chaos.real``, ``chaos.real_sink``,
``chaos.real_recovery``) share: the options and result fields every workload has, the seed
choice, the argument check and the run directory's clean-up."""

from __future__ import annotations

import random
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar


@dataclass(frozen=True)
class RunOptions:
    """The options of every real-process workload (subclasses may change the defaults)."""

    duration_s: float = 60.0
    seed: int = 1
    records: int = 2000
    partitions: int = 3
    drain_timeout_s: float = 60.0
    run_dir: Path | None = None
    keep: bool = False


OptionsT = TypeVar("OptionsT", bound=RunOptions)


@dataclass
class RunResult(Generic[OptionsT]):
    """The outcome fields every real-process workload reports."""

    options: OptionsT
    run_dir: Path
    faults: Counter[str] = field(default_factory=Counter)
    outputs: int = 0
    duplicates: int = 0
    lost: int = 0


def choose_seed(seed: int | None) -> int:
    """``seed``, or a fresh random one when none was given."""
    return seed if seed is not None else random.SystemRandom().randrange(1, 2**31)


def require_positive(values: dict[str, float]) -> None:
    """Raise ``ValueError`` naming every flag in ``values`` unless all of them are positive."""
    if any(value <= 0 for value in values.values()):
        *first, last = values
        msg = f"{', '.join(first)} and {last} must be positive"
        raise ValueError(msg)


def keep_or_remove(run_dir: Path, *, keep: bool, ok: bool) -> bool:
    """Delete the run directory of a passing run not asked to be kept; True if it stays."""
    kept = keep or not ok
    if not kept:
        shutil.rmtree(run_dir, ignore_errors=True)
    return kept
