"""Kafka's rules for topic names, shared by the broker and the client library."""

from __future__ import annotations

import re
from collections.abc import Iterable

_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME_LENGTH = 249


def topic_name_error(name: str) -> str | None:
    """Why ``name`` is not a legal topic name, or None when it is (Apache Kafka 4.4's rules
    and messages, as its CreateTopics answers them)."""
    if not name:
        return "Topic name is invalid: the empty string is not allowed"
    if name in (".", ".."):
        return f"Topic name is invalid: '{name}' is not allowed"
    if len(name) > MAX_NAME_LENGTH:
        return (
            f"Topic name is invalid: the length of '{name}' is longer than the max allowed "
            f"length {MAX_NAME_LENGTH}"
        )
    if not _LEGAL_NAME.match(name):
        return (
            f"Topic name is invalid: '{name}' contains one or more characters other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


def has_collision_chars(name: str) -> bool:
    """Whether ``name`` can collide with another topic's name (it has a ``.`` or ``_``)."""
    return "." in name or "_" in name


def unified(name: str) -> str:
    """``name`` with ``.`` as ``_``: two topics that unify alike have colliding metric names."""
    return name.replace(".", "_")


def collision(name: str, existing: Iterable[str]) -> str | None:
    """An existing topic other than ``name`` whose name collides with it on ``.``/``_``.

    Kafka refuses to create such a topic (INVALID_TOPIC_EXCEPTION, ``collision_message``);
    topics created together in one request are not checked against each other, as in Kafka.
    """
    if not has_collision_chars(name):
        return None
    key = unified(name)
    return next((other for other in existing if other != name and unified(other) == key), None)


def collision_message(name: str, other: str) -> str:
    return f"Topic '{name}' collides with existing topic: {other}"
