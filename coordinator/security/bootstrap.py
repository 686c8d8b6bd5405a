"""``sharetxn broker --add-scram``: SCRAM users written before the broker serves.

The argument has the form of Kafka's ``kafka-storage.sh format --add-scram``:
``SCRAM-SHA-256=[name=alice,password=alice-secret]``, optionally with
``iterations=8192`` (default 4096) and ``salt=<base64>``; a value may be quoted
(``password="a,b"``).
"""

from __future__ import annotations

import base64
import binascii
import re

from coordinator.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    ScramMechanism,
    make_credential,
)
from coordinator.security.store import SecurityMetadata

_SPEC = re.compile(r"^\s*([A-Za-z0-9-]+)\s*=\s*\[(.*)\]\s*$", re.S)
_PAIR = re.compile(r'\s*([A-Za-z]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^,]*)\s*(?:,|$)')


class ScramSpecError(ValueError):
    """An --add-scram argument that cannot be used (the message names the problem)."""


def parse_add_scram(text: str) -> tuple[str, ScramMechanism, ScramCredential]:
    match = _SPEC.match(text)
    if match is None:
        msg = f"--add-scram: expected MECHANISM=[name=NAME,password=PASSWORD], got {text[:40]!r}"
        raise ScramSpecError(msg)
    try:
        mechanism = ScramMechanism.from_name(match.group(1))
    except ValueError as exc:
        raise ScramSpecError(f"--add-scram: {exc}") from None
    options: dict[str, str] = {}
    body = match.group(2)
    position = 0
    while position < len(body):
        pair = _PAIR.match(body, position)
        if pair is None or pair.end() == position:
            msg = "--add-scram: cannot parse the options in [...] (name=...,password=...)"
            raise ScramSpecError(msg)
        value = pair.group(2)
        if value.startswith('"'):
            value = value[1:-1].replace('\\"', '"')
        options[pair.group(1).lower()] = value
        position = pair.end()
    name, password = options.get("name"), options.get("password")
    if not name:
        msg = "--add-scram: name=... is required"
        raise ScramSpecError(msg)
    if password is None:
        msg = f"--add-scram: password=... is required for {name}"
        raise ScramSpecError(msg)
    try:
        iterations = int(options.get("iterations", MIN_ITERATIONS))
    except ValueError:
        msg = "--add-scram: iterations must be an integer"
        raise ScramSpecError(msg) from None
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        msg = f"--add-scram: iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}"
        raise ScramSpecError(msg)
    salt = None
    if "salt" in options:
        try:
            salt = base64.b64decode(options["salt"], validate=True)
        except (binascii.Error, ValueError):
            msg = "--add-scram: salt must be base64"
            raise ScramSpecError(msg) from None
    return name, mechanism, make_credential(mechanism, password, iterations, salt)


def add_scram_users(metadata: SecurityMetadata, specs: list[str]) -> list[str]:
    """Parse every spec first, then store them in one durable write; the users added."""
    parsed = [parse_add_scram(spec) for spec in specs]
    if not parsed:
        return []
    scram = dict(metadata.scram)
    for name, mechanism, credential in parsed:
        scram[(name, mechanism)] = credential
    metadata.save_scram(scram)
    return [f"{name} ({mechanism.mechanism_name})" for name, mechanism, _c in parsed]
