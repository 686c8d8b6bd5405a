"""``sharetxn configs`` for client quotas, as kafka-configs.sh:

    sharetxn configs --entity-type users --entity-name alice --alter \\
        --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
    sharetxn configs --entity-type users --entity-name alice --entity-type clients \\
        --entity-default --alter --add-config request_percentage=50
    sharetxn configs --entity-type clients --entity-default --describe
    sharetxn configs --entity-type users --describe          (every user entity)

Each ``--entity-type`` takes the ``--entity-name`` or ``--entity-default`` that follows it
(users and clients may be combined; ips stand alone).  Values are numbers; a quota is removed
with ``--delete-config``.
"""

from __future__ import annotations

import argparse
import decimal
import math
from collections.abc import Sequence

from rich.console import Console

from chaos.cli.support import CliError, ExitCode, emit_json
from producer.admin import Admin
from producer.admin.quotas import MATCH_DEFAULT, MATCH_EXACT, MATCH_SPECIFIED, QuotaEntity
from txn.errors import ErrorCode

__all__ = ["QUOTA_ENTITY_TYPES", "quota_action"]

#: kafka-configs.sh's entity types of client quotas and the wire's entity types.
QUOTA_ENTITY_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
_DESCRIBED = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}


def _entity(args: argparse.Namespace) -> list[tuple[str, str | None, bool]]:
    """(wire entity type, name or None, named) per --entity-type, pairing each with the
    --entity-name / --entity-default that follows it (kafka-configs.sh's order)."""
    types: list[str] = args.entity_types
    names: list[str | None] = list(args.entity_names)
    if len(names) > len(types):
        msg = "each --entity-name or --entity-default follows an --entity-type"
        raise CliError(msg, ExitCode.USAGE)
    wire = [QUOTA_ENTITY_TYPES.get(t) for t in types]
    if None in wire:
        msg = "--entity-type users, clients and ips cannot be combined with other types"
        raise CliError(msg, ExitCode.USAGE)
    if "ip" in wire and len(wire) > 1:
        msg = "--entity-type ips cannot be combined with users or clients"
        raise CliError(msg, ExitCode.USAGE)
    if len(set(wire)) != len(wire):
        msg = "an --entity-type is given twice"
        raise CliError(msg, ExitCode.USAGE)
    out: list[tuple[str, str | None, bool]] = []
    for index, kind in enumerate(wire):
        assert kind is not None
        if index < len(names):
            out.append((kind, names[index], True))
        else:
            out.append((kind, None, False))
    return out


def describe_entity(entity: QuotaEntity) -> str:
    """kafka-configs.sh's words: ``user-principal 'alice', the default client-id``."""
    ordered = sorted(entity, key=lambda part: list(_DESCRIBED).index(part[0]))
    return ", ".join(
        f"the default {_DESCRIBED.get(t, t)}" if n is None else f"{_DESCRIBED.get(t, t)} '{n}'"
        for t, n in ordered
    )


def java_double(value: float) -> str:
    """Java's ``Double.toString``, as kafka-configs.sh prints a quota: plain from 10^-3 up to
    10^7 (``1024.0``), else scientific (``1.0E9``), with the shortest digits either way."""
    value = float(value)
    if not math.isfinite(value):
        return _JAVA_SPECIAL[repr(value)]
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    power = exponent + len(text) - 1
    mantissa = text[0] + "." + (text[1:] or "0")
    return f"{'-' if sign else ''}{mantissa}E{power}"


_JAVA_SPECIAL = {"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN"}


def parse_values(configs: dict[str, str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, text in configs.items():
        try:
            out[key] = float(text)
        except ValueError:
            msg = f"Cannot parse quota configuration value for {key}: {text}"
            raise CliError(msg, ExitCode.USAGE) from None
    return out


def quota_action(
    admin: Admin,
    console: Console,
    args: argparse.Namespace,
    set_configs: dict[str, str],
    delete: Sequence[str],
) -> int:
    parts = _entity(args)
    if args.describe:
        components = [
            (kind, MATCH_SPECIFIED, None)
            if not named
            else (kind, MATCH_DEFAULT, None)
            if name is None
            else (kind, MATCH_EXACT, name)
            for kind, name, named in parts
        ]
        found = admin.describe_client_quotas(components, strict=True)
        order = sorted(found, key=lambda e: [(t, n or "") for t, n in e])
        if args.json:
            emit_json(
                [{"entity": dict(e), "quotas": dict(sorted(found[e].items()))} for e in order]
            )
            return ExitCode.OK
        for e in order:
            values = ", ".join(f"{k}={java_double(v)}" for k, v in sorted(found[e].items()))
            console.print(
                f"Quota configs for {describe_entity(e)} are {values}",
                markup=False,
                soft_wrap=True,
            )
        return ExitCode.OK
    if any(not named for _k, _n, named in parts):
        msg = "--alter needs an --entity-name or --entity-default for each --entity-type"
        raise CliError(msg, ExitCode.USAGE)
    quotas = parse_values(set_configs)
    entity = {kind: name for kind, name, _named in parts}
    if delete:  # as kafka-configs.sh: only quotas the entity has can be deleted
        exact = [(k, MATCH_DEFAULT if n is None else MATCH_EXACT, n) for k, n in entity.items()]
        current = admin.describe_client_quotas(exact, strict=True)
        have = {key for quotas in current.values() for key in quotas}
        if invalid := [k for k in delete if k not in have]:
            raise CliError(f"Invalid config(s): {','.join(invalid)}")
    result = admin.alter_client_quotas(entity, quotas, list(delete))
    label = describe_entity(tuple(entity.items()))
    if args.json:
        emit_json({"entity": entity, "result": result.error.name, "message": result.message})
    elif result.error is ErrorCode.NONE:
        # kafka-configs.sh names the first entity type given and its name.
        head_type, head_name = args.entity_types[0], parts[0][1]
        done = (
            f"Completed updating default config for {head_type} in the cluster."
            if head_name is None
            else f"Completed updating config for {head_type[:-1]} {head_name}."
        )
        console.print(done, markup=False, soft_wrap=True)
    if result.error is not ErrorCode.NONE:
        raise CliError(f"cannot alter the quotas of {label}: {result.message or result.error.name}")
    return ExitCode.OK
