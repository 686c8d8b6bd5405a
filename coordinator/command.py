"""The broker's command: ``sharetxn broker`` and ``python -m coordinator``.

Its options, the server.properties reader, data-directory locking, serving until SIGTERM, and
the log formats.  The ``sharetxn`` command line (``chaos.cli``) adds these options under
``broker``; ``python -m coordinator`` (``LocalBroker``'s child process) takes them alone.
Nothing here loads client, recovery or chaos code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from txn.config import BrokerConfig
from txn.errors import InvalidConfigError
from txn.exit_codes import UsageExitParser

HELP = "run a single-node Kafka-protocol broker"
DESCRIPTION = (
    "Run a single-node broker that speaks the Kafka protocol, with durable logs, "
    "transactions and (KIP-1289) transactional share acknowledgements. Prints "
    "'sharetxn broker ready on HOST:PORT' once it accepts connections; SIGTERM "
    "flushes and exits cleanly."
)
EPILOG = "Broker settings use Kafka's names, e.g. --set transaction.max.timeout.ms=60000"


def _parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        msg = f"expected HOST:PORT, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return host, int(port)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``sharetxn broker``."""
    parser.add_argument("--data-dir", type=Path, required=True, help="directory for the logs")
    parser.add_argument(
        "--listen",
        type=_parse_listen,
        default=("127.0.0.1", 9092),
        metavar="HOST:PORT",
        help="address to listen on; port 0 picks a free port (default 127.0.0.1:9092)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="a Kafka-style server.properties file; --set overrides it (keys this broker"
        " does not use are logged and ignored, as Kafka does)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker config with its Kafka name (repeatable)",
    )
    parser.add_argument(
        "--add-scram",
        action="append",
        default=[],
        metavar="'MECHANISM=[name=NAME,password=PASSWORD]'",
        help="store a SCRAM-SHA-256 or SCRAM-SHA-512 user before serving, as kafka-storage.sh "
        "format --add-scram (repeatable; iterations=N optional)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve every metric in the Prometheus text format at http://HOST:PORT/metrics "
        "(0 picks a free port); OTEL_METRICS_EXPORTER=otlp pushes them with OTLP",
    )
    parser.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        metavar="HOST",
        help="address of the metrics endpoint (default 127.0.0.1)",
    )
    parser.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="log lines as text (default) or as one JSON object each",
    )


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


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
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


def configure_logging(verbose: bool, log_format: str = "text") -> None:
    """Log to stderr at INFO (DEBUG if verbose), as text or as one JSON object a line."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonLogFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m coordinator [-v] --data-dir DIR ...``: the broker alone."""
    parser = UsageExitParser(
        prog="sharetxn broker",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log at DEBUG level, tracebacks on errors"
    )
    add_arguments(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    configure_logging(args.verbose, args.log_format)
    return run(parser, args)
