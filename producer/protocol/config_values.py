"""Reading int and boolean config values, for every client's config parser.

The parsers word their own errors; these only say whether a value is one (None if not).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# A consumer's waits may be 0; its other integer configs must be at least 1.
_CONSUMER_ZERO_OK = frozenset({"fetch.max.wait.ms", "retry.backoff.ms"})


def as_int(raw: Any) -> int | None:
    """``raw`` as an integer (an int, or a string of one; never a bool), or None."""
    if isinstance(raw, bool):
        return None
    try:
        return int(raw)
    except (TypeError, ValueError):
        return None


def as_bool(raw: object) -> bool | None:
    """``raw`` as a boolean (a bool, or ``true``/``false`` in any case), or None."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    return None


def consumer_int(client: str, key: str, raw: object, error: Callable[[str], Exception]) -> int:
    """A consumer's integer config ``key`` (>= 0 for its waits, >= 1 otherwise), else ``error``."""
    number = as_int(raw)
    if number is None:
        msg = f"{client} config {key!r} must be an integer, not {raw!r}"
        raise error(msg)
    minimum = 0 if key in _CONSUMER_ZERO_OK else 1
    if number < minimum:
        msg = f"{client} config {key!r} must be >= {minimum}, not {number}"
        raise error(msg)
    return number
