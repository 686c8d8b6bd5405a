"""``sharetxn configs``: describe and alter configs, like kafka-configs.sh.

    sharetxn configs --entity-type topics --entity-name T --describe [--all]
    sharetxn configs --entity-type groups --entity-name G --alter \\
        --add-config share.auto.offset.reset=earliest,share.record.lock.duration.ms=15000
    sharetxn configs --entity-type groups --entity-name G --alter \\
        --delete-config share.auto.offset.reset
    sharetxn configs --entity-type brokers --entity-name 1 --describe --all
    sharetxn configs --entity-type broker-loggers --entity-name 1 --alter \\
        --add-config sharetxn.partition=DEBUG
    sharetxn configs --entity-type users --entity-name alice --alter \\
        --add-config producer_byte_rate=1048576
    sharetxn configs --entity-type clients --entity-default --describe

``--add-config`` takes ``k=v`` pairs separated by commas; a value holding commas is written
in brackets (``k=[a,b]``), as in kafka-configs.sh.  ``--describe`` shows the values set on
the entity; ``--all`` adds defaults and static broker values.  ``broker-loggers`` are the
broker's loggers and their levels (TRACE, DEBUG, INFO, WARN, ERROR, FATAL); a deleted level
follows the logger's parents again.  ``users``, ``clients`` and ``ips`` are client quota
entities (``chaos.cli.quota_configs``).
"""

from __future__ import annotations

import argparse

from rich.console import Console

from chaos.cli.quota_configs import QUOTA_ENTITY_TYPES, quota_action
from chaos.cli.support import (
    EXIT_CODES_HELP,
    CliError,
    ExitCode,
    add_actions,
    add_command_options,
    emit_json,
    guarded,
    run_admin,
)
from producer.admin import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    Admin,
    ConfigEntry,
)
from txn.errors import ErrorCode, UnknownTopicOrPartitionError

EXAMPLES = f"""examples:
  sharetxn configs --entity-type topics --entity-name orders --describe
  sharetxn configs --entity-type topics --entity-name orders --alter \\
      --add-config retention.ms=3600000
  sharetxn configs --entity-type groups --entity-name orders --alter \\
      --add-config share.auto.offset.reset=earliest
  sharetxn configs --entity-type brokers --entity-name 1 --describe --all
  sharetxn configs --entity-type broker-loggers --entity-name 1 --describe
  sharetxn configs --entity-type broker-loggers --entity-name 1 --alter \\
      --add-config sharetxn.partition=DEBUG
  sharetxn configs --entity-type users --entity-name alice --alter \\
      --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
  sharetxn configs --entity-type users --entity-name alice --entity-type clients \\
      --entity-default --alter --add-config request_percentage=50
  sharetxn configs --entity-type clients --describe

{EXIT_CODES_HELP}"""

ENTITY_TYPES = {
    "topics": RESOURCE_TOPIC,
    "groups": RESOURCE_GROUP,
    "brokers": RESOURCE_BROKER,
    "broker-loggers": RESOURCE_BROKER_LOGGER,
}
_SINGULAR = {
    "topics": "topic",
    "groups": "group",
    "brokers": "broker",
    "broker-loggers": "broker-logger",
}


class _InOrder(argparse.Action):
    """--entity-type / --entity-name / --entity-default, also kept in the order given (a
    quota entity pairs each type with the name that follows it, as kafka-configs.sh)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        if self.dest == "entity_type":
            namespace.entity_types = [*getattr(namespace, "entity_types", []), values]
        else:
            name = None if self.dest == "entity_default" else values
            namespace.entity_names = [*getattr(namespace, "entity_names", []), name]
        setattr(namespace, self.dest, True if self.dest == "entity_default" else values)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_command_options(parser, EXAMPLES)
    parser.set_defaults(entity_types=[], entity_names=[])
    parser.add_argument(
        "--entity-type",
        required=True,
        choices=sorted({*ENTITY_TYPES, *QUOTA_ENTITY_TYPES}),
        action=_InOrder,
        help="repeatable for a (users, clients) quota entity",
    )
    parser.add_argument(
        "--entity-name",
        metavar="NAME",
        action=_InOrder,
        help="topic, group, broker id (brokers, broker-loggers), user, client id or ip",
    )
    parser.add_argument(
        "--entity-default",
        nargs=0,
        default=False,
        action=_InOrder,
        help="brokers: the cluster-wide defaults; users, clients, ips: the default entity",
    )
    add_actions(parser, {"describe": "show configs", "alter": "set or delete configs"})
    parser.add_argument("--all", action="store_true", help="--describe: defaults too")
    parser.add_argument(
        "--add-config", action="append", default=[], metavar="K=V[,K=V...]", help="set configs"
    )
    parser.add_argument(
        "--delete-config", action="append", default=[], metavar="K[,K...]", help="remove configs"
    )


def parse_add_config(items: list[str]) -> dict[str, str]:
    """``a=1,b=[x,y]`` → {"a": "1", "b": "x,y"} (brackets protect commas, as Kafka's tool)."""
    configs: dict[str, str] = {}
    for item in items:
        for pair in _split_top_level(item):
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                msg = f"--add-config: expected KEY=VALUE, got {pair!r}"
                raise CliError(msg, ExitCode.USAGE)
            value = value.strip()
            if value.startswith("[") and value.endswith("]"):
                value = value[1:-1]
            configs[key.strip()] = value
    return configs


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p for p in (x.strip() for x in parts) if p]


def run(args: argparse.Namespace) -> int:
    if any(t in QUOTA_ENTITY_TYPES for t in args.entity_types):
        return guarded(args, lambda: _run_quotas(args))

    def body() -> int:
        if len(args.entity_types) > 1:
            msg = "only users and clients --entity-type may be given together"
            raise CliError(msg, ExitCode.USAGE)
        name = _entity_name(args)
        return run_admin(
            args, "sharetxn-configs", lambda admin, console: _act(admin, console, args, name)
        )

    return guarded(args, body)


def _run_quotas(args: argparse.Namespace) -> int:
    set_configs = parse_add_config(args.add_config)
    delete = [k for item in args.delete_config for k in _split_top_level(item)]
    if args.alter and not set_configs and not delete:
        msg = "--alter needs --add-config and/or --delete-config"
        raise CliError(msg, ExitCode.USAGE)
    return run_admin(
        args,
        "sharetxn-configs",
        lambda admin, console: quota_action(admin, console, args, set_configs, delete),
    )


def _entity_name(args: argparse.Namespace) -> str:
    if args.entity_default:
        if args.entity_type != "brokers":
            msg = "--entity-default is only for --entity-type brokers"
            raise CliError(msg, ExitCode.USAGE)
        return ""
    if not args.entity_name:
        msg = "--entity-name is required (or --entity-default for brokers)"
        raise CliError(msg, ExitCode.USAGE)
    return str(args.entity_name)


def _set_on(entry: ConfigEntry, name: str) -> bool:
    """Set on the entity itself: the cluster default's are its dynamic defaults."""
    return entry.source == "DYNAMIC_DEFAULT_BROKER_CONFIG" if name == "" else entry.explicit


def _act(admin: Admin, console: Console, args: argparse.Namespace, name: str) -> int:
    resource = ENTITY_TYPES[args.entity_type]
    label = f"{_SINGULAR[args.entity_type]} {name or '<default>'}"
    if args.describe:
        try:
            entries = admin.describe_config_entries(resource, name)
        except UnknownTopicOrPartitionError:
            msg = f"The {_SINGULAR[args.entity_type]} '{name}' doesn't exist"
            raise CliError(msg, ExitCode.NOT_FOUND) from None
        shown = sorted((e for e in entries if args.all or _set_on(e, name)), key=lambda e: e.name)
        if args.json:
            rows: list[dict[str, object]] = [
                {
                    "name": e.name,
                    "value": "(sensitive)" if e.sensitive else e.value,
                    "source": e.source,
                    "read_only": e.read_only,
                }
                for e in shown
            ]
            emit_json({"entity": label, "configs": rows})
            return ExitCode.OK
        # kafka-configs.sh's form: a header line, then one indented line per config
        kind = "All" if args.all else "Dynamic"
        if name:
            console.print(f"{kind} configs for {label} are:", markup=False, soft_wrap=True)
        else:
            console.print(
                f"{'All' if args.all else 'Default'} configs for brokers in the cluster are:"
            )
        for e in shown:
            value = "null" if e.sensitive else e.value
            synonyms = "" if resource == RESOURCE_BROKER_LOGGER else f"{e.source}:{e.name}={value}"
            console.print(
                f"  {e.name}={value} sensitive={str(e.sensitive).lower()} synonyms={{{synonyms}}}",
                markup=False,
                soft_wrap=True,
            )
        return ExitCode.OK
    set_configs = parse_add_config(args.add_config)
    delete = [k for item in args.delete_config for k in _split_top_level(item)]
    if not set_configs and not delete:
        msg = "--alter needs --add-config and/or --delete-config"
        raise CliError(msg, ExitCode.USAGE)
    if delete:  # as kafka-configs.sh: only configs the entity has set can be deleted
        try:
            entries = admin.describe_config_entries(resource, name)
        except UnknownTopicOrPartitionError:
            msg = f"The {_SINGULAR[args.entity_type]} '{name}' doesn't exist"
            raise CliError(msg, ExitCode.NOT_FOUND) from None
        current = {e.name for e in entries if _set_on(e, name)}
        if invalid := [k for k in delete if k not in current]:
            raise CliError(f"Invalid config(s): {','.join(invalid)}")
    result = admin.incremental_alter_configs(resource, name, set_configs, delete)
    if args.json:
        emit_json({"entity": label, "result": result.error.name, "message": result.message})
    elif result.error is ErrorCode.NONE:
        console.print(f"Completed updating config for {label}.")
    if result.error is not ErrorCode.NONE:
        raise CliError(f"cannot alter the configs of {label}: {result.describe()}")
    return ExitCode.OK
