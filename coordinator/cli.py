"""The ``sharetxn`` command line.

``sharetxn broker`` runs the broker.  Client-side commands (``demo``, and
later ``txn``, ``recover``, ``chaos``) live in the packages that own them and
are imported only when chosen, so the broker package never depends on them.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.metadata
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from txn.config import BrokerConfig
from txn.errors import InvalidConfigError
from txn.exit_codes import UsageExitParser

# subcommand -> (module, help); each module has add_arguments(parser) and run(args) -> int
_EXTERNAL: dict[str, tuple[str, str]] = {
    "topics": (
        "producer.topics_cli",
        "create, list, describe, alter and delete topics (like kafka-topics.sh)",
    ),
    "configs": (
        "producer.configs_cli",
        "describe and alter topic, group and broker configs (like kafka-configs.sh)",
    ),
    "consumer-groups": (
        "producer.consumer_groups_cli",
        "list, describe, reset and delete consumer groups and offsets "
        "(like kafka-consumer-groups.sh)",
    ),
    "share-groups": (
        "producer.share_groups_cli",
        "list, describe, reset and delete share groups (like kafka-share-groups.sh)",
    ),
    "sink": (
        "producer.sink.cli",
        "run share-group sink tasks (KIP-1302), at-least-once or exactly-once "
        "(like connect-standalone.sh)",
    ),
    "txn": (
        "recovery.txn_cli",
        "list, describe, find hanging, commit, abort and force-terminate transactions "
        "(like kafka-transactions.sh, plus pending share acks)",
    ),
    "recover": (
        "recovery.recover_cli",
        "resolve a Spark query's prepared transactions from its checkpoint",
    ),
    "chaos": (
        "chaos.cli",
        "prove exactly-once under faults: deterministic simulation (run, replay, mutants) "
        "and real processes with kill -9 and SIGSTOP (real)",
    ),
    "demo": (
        "chaos.spark_demo",
        "the exactly-once Spark pipeline on an embedded broker: SIGKILL the driver midway, "
        "restart, verify exactly-once (needs the spark extra)",
    ),
    "spark-kafka-jars": (
        "producer.spark.kafka_connector",
        "print the spark.jars of Spark's own Kafka connector for the installed PySpark "
        "(resolved once with mvn), or its Maven coordinate",
    ),
    "copy-demo": (
        "chaos.demo",
        "copy records between topics in transactions, kill -9 the broker midway, "
        "verify exactly-once (no Spark)",
    ),
}

EXAMPLES = """examples:
  sharetxn broker --data-dir ./data --listen 127.0.0.1:9092
  sharetxn broker --data-dir ./data --listen 127.0.0.1:0 --set log.flush.interval.messages=1000
  sharetxn broker --data-dir ./data --set listeners=SASL_PLAINTEXT://127.0.0.1:9092 \
      --set sasl.enabled.mechanisms=SCRAM-SHA-256 \
      --add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]'
  sharetxn demo --records 100000
  sharetxn copy-demo --records 2000
  sharetxn topics --create --topic orders --partitions 6 --bootstrap-server 127.0.0.1:9092
  sharetxn configs --entity-type topics --entity-name orders --describe
  sharetxn share-groups --describe --group orders --bootstrap-server 127.0.0.1:9092
  sharetxn sink run orders-to-file.properties
  sharetxn txn list --state Ongoing --older-than 15m
  sharetxn recover --checkpoint /chk/orders-query --execute
"""


def _version() -> str:
    try:
        return importlib.metadata.version("sharetxn")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        msg = f"expected HOST:PORT, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return host, int(port)


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser; only the chosen client-side subcommand's module is imported (fast startup)."""
    parser = UsageExitParser(
        prog="sharetxn",
        description="Exactly-once processing for Kafka share groups (KIP-1289).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log at DEBUG level, tracebacks on errors"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    broker = sub.add_parser(
        "broker",
        help="run a single-node Kafka-protocol broker",
        description=(
            "Run a single-node broker that speaks the Kafka protocol, with durable logs, "
            "transactions and (KIP-1289) transactional share acknowledgements. Prints "
            "'sharetxn broker ready on HOST:PORT' once it accepts connections; SIGTERM "
            "flushes and exits cleanly."
        ),
        epilog="Broker settings use Kafka's names, e.g. --set transaction.max.timeout.ms=60000",
    )
    broker.add_argument("--data-dir", type=Path, required=True, help="directory for the logs")
    broker.add_argument(
        "--listen",
        type=_parse_listen,
        default=("127.0.0.1", 9092),
        metavar="HOST:PORT",
        help="address to listen on; port 0 picks a free port (default 127.0.0.1:9092)",
    )
    broker.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="a Kafka-style server.properties file; --set overrides it (keys this broker"
        " does not use are logged and ignored, as Kafka does)",
    )
    broker.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker config with its Kafka name (repeatable)",
    )
    broker.add_argument(
        "--add-scram",
        action="append",
        default=[],
        metavar="'MECHANISM=[name=NAME,password=PASSWORD]'",
        help="store a SCRAM-SHA-256 or SCRAM-SHA-512 user before serving, as kafka-storage.sh "
        "format --add-scram (repeatable; iterations=N optional)",
    )
    broker.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve every metric in the Prometheus text format at http://HOST:PORT/metrics "
        "(0 picks a free port); OTEL_METRICS_EXPORTER=otlp pushes them with OTLP",
    )
    broker.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        metavar="HOST",
        help="address of the metrics endpoint (default 127.0.0.1)",
    )
    broker.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="log lines as text (default) or as one JSON object each",
    )
    for name, (module, help_text) in _EXTERNAL.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            importlib.import_module(module).add_arguments(sp)
    _add_version(parser, f"sharetxn {_version()}")
    return parser


def _add_version(parser: argparse.ArgumentParser, version: str) -> None:
    """``--version`` on ``parser`` and on every command and action below it, as Kafka's
    tools take it after their name (``sharetxn topics --version``)."""
    # argparse has no public way to walk a parser's sub-commands
    if "--version" not in parser._option_string_actions:  # noqa: SLF001
        parser.add_argument("--version", action="version", version=version)
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for child in action.choices.values():
                _add_version(child, version)


def _chosen_command(argv: Sequence[str]) -> str | None:
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in _EXTERNAL else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_chosen_command(arguments))
    args = parser.parse_args(arguments)
    handler = logging.StreamHandler(sys.stderr)
    if getattr(args, "log_format", "text") == "json":
        handler.setFormatter(JsonLogFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, handlers=[handler])
    if args.command == "broker":
        return _run_broker(parser, args)
    module, _help = _EXTERNAL[args.command]
    result: int = importlib.import_module(module).run(args)
    return result


def _properties_file(path: Path) -> dict[str, str]:
    """The known broker configs of a Java properties file (``key=value`` or ``key: value``,
    ``#``/``!`` comments, ``\\`` line continuations); unknown keys are logged and ignored."""
    try:
        text = path.read_text()
    except OSError as exc:
        msg = f"cannot read --config {path}: {exc.strerror or exc}"
        raise InvalidConfigError(msg) from exc
    out: dict[str, str] = {}
    unknown: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        key, value = (line[:cut], line[cut + 1 :]) if cut >= 0 else (line, "")
        key, value = key.strip(), value.strip()
        if BrokerConfig.is_known(key):
            out[key] = value
        else:
            unknown.append(key)
    if unknown:
        logging.getLogger("sharetxn.broker").warning(
            "%s: ignoring %d config(s) this broker does not use: %s",
            path,
            len(unknown),
            ", ".join(sorted(unknown)),
        )
    return out


def _run_broker(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        from_file = _properties_file(args.config) if args.config is not None else {}
        config = BrokerConfig({**from_file, **BrokerConfig.parse_assignments(args.set)})
        config.validate()
    except InvalidConfigError as exc:
        parser.error(str(exc))
    data_dir: Path = args.data_dir
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = "it is not a directory" if data_dir.exists() else (exc.strerror or str(exc))
        print(f"sharetxn broker: cannot use data directory {data_dir}: {reason}", file=sys.stderr)
        return 1
    from coordinator.log.data_dir import DataDirError, DataDirLock  # noqa: PLC0415

    lock = DataDirLock(data_dir)
    try:
        lock.acquire()  # before anything is read or written: one broker per directory
    except DataDirError as exc:
        print(f"sharetxn broker: {exc}", file=sys.stderr)
        return 1
    try:
        return _serve_locked(args, config, data_dir)
    finally:
        lock.release()


def _serve_locked(args: argparse.Namespace, config: BrokerConfig, data_dir: Path) -> int:
    host, port = args.listen
    from coordinator.launcher import serve  # noqa: PLC0415 - keeps `sharetxn --help` fast
    from coordinator.log.data_dir import DataDirError  # noqa: PLC0415
    from coordinator.metrics_export import MetricsExportError  # noqa: PLC0415
    from coordinator.security.bootstrap import (  # noqa: PLC0415
        ScramSpecError,
        add_scram_users,
    )
    from coordinator.security.store import (  # noqa: PLC0415
        FileSecurityStorage,
        SecurityMetadata,
    )

    try:
        metadata = SecurityMetadata(FileSecurityStorage(data_dir))
        added = add_scram_users(metadata, list(args.add_scram))
    except (ScramSpecError, ValueError, OSError) as exc:
        print(f"sharetxn broker: {exc}", file=sys.stderr)
        return 1
    if added:
        logging.getLogger("sharetxn.security").info("SCRAM credentials stored for %s", added)

    try:
        asyncio.run(
            serve(
                data_dir,
                host,
                port,
                config,
                metrics_port=args.metrics_port,
                metrics_host=args.metrics_host,
                metadata=metadata,
            )
        )
    except InvalidConfigError as exc:
        print(f"sharetxn broker: {exc}", file=sys.stderr)
        return 1
    except (MetricsExportError, DataDirError) as exc:
        print(f"sharetxn broker: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"sharetxn broker: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 1
    return 0


class JsonLogFormatter(logging.Formatter):
    """One JSON object per log line: time, level, logger, message (and the exception)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


if __name__ == "__main__":
    sys.exit(main())
