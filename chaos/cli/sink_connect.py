"""``sharetxn sink standalone`` and ``sharetxn sink distributed``: workers with Connect's REST API.

``sharetxn sink standalone connect-standalone.properties [CONNECTOR.properties ...]`` runs
every connector in this process, as ``connect-standalone.sh``; more can be added over the
REST API (kept in memory).  ``sharetxn sink distributed connect-distributed.properties``
joins the workers of its ``group.id``, as ``connect-distributed.sh``: connectors are created
over the REST API and stored in ``config.storage.topic``.

Prints ``sharetxn sink worker <URL> running`` once the REST API listens (and, distributed,
the worker joined its group), then runs until SIGTERM or Ctrl-C: every task finishes,
acknowledges and commits its batch, the worker leaves its group, exit 0 (130 after Ctrl-C).
A bad config exits 64, an unreachable cluster 69.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from types import FrameType

from chaos.cli.support import CliError, read_properties, report_error
from producer.sink.distributed import DistributedHerder, DistributedSettings
from producer.sink.herder import Herder, HerderError, StandaloneHerder
from producer.sink.rest import RestServer
from txn.errors import KafkaProtocolError, RetriableError
from txn.exit_codes import ExitCode

__all__ = ["add_parsers", "run_distributed", "run_standalone"]

READY_PREFIX = "sharetxn sink worker "
_JOIN_TIMEOUT_S = 120.0


def add_parsers(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    standalone = actions.add_parser(
        "standalone",
        help="run connectors in this process, with Connect's REST API",
        description=(__doc__ or "").replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    standalone.add_argument("config", type=Path, help="worker properties")
    standalone.add_argument("connectors", type=Path, nargs="*", help="connector properties")
    distributed = actions.add_parser(
        "distributed",
        help="join a group of workers sharing connectors (Connect's distributed mode)",
        description=(__doc__ or "").replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    distributed.add_argument("config", type=Path, help="connect-distributed.properties")
    for parser in (standalone, distributed):
        parser.add_argument(
            "--bootstrap-server",
            default=None,
            metavar="HOST:PORT",
            help="overrides bootstrap.servers of the worker properties",
        )


def _worker_props(args: argparse.Namespace) -> dict[str, str]:
    props = dict(read_properties(args.config))
    if args.bootstrap_server:
        props["bootstrap.servers"] = args.bootstrap_server
    return props


def run_standalone(args: argparse.Namespace) -> int:
    try:
        props = _worker_props(args)
        connectors = [dict(read_properties(p)) for p in args.connectors]
        rest = RestServer(props)
    except (CliError, ValueError, OSError) as exc:
        return _fail(args, f"bad config: {exc}", ExitCode.USAGE)
    herder = StandaloneHerder(props, rest.url.removeprefix("http://").rstrip("/"))
    try:
        for config in connectors:
            name = config.get("name", "")
            herder.put_connector_config(name, config, allow_replace=True)
    except HerderError as exc:
        rest.stop()
        return _fail(args, f"bad config: {exc.message}", ExitCode.USAGE)
    rest.start(herder)
    return _serve(args, herder, rest, lambda: None)


def run_distributed(args: argparse.Namespace) -> int:
    try:
        props = _worker_props(args)
        DistributedSettings(props)  # every config error before the port is bound
        rest = RestServer(props)
        herder = DistributedHerder(props, rest.url)
    except (CliError, ValueError, OSError) as exc:
        return _fail(args, f"bad config: {exc}", ExitCode.USAGE)
    try:
        herder.start()
    except RetriableError as exc:
        rest.stop()
        return _fail(args, f"cluster unreachable: {exc}", ExitCode.UNAVAILABLE)
    except (KafkaProtocolError, RuntimeError) as exc:
        rest.stop()
        return _fail(args, f"{type(exc).__name__}: {exc}", ExitCode.FAILED)
    rest.start(herder)
    if not herder.wait_until_joined(_JOIN_TIMEOUT_S):
        herder.stop()
        rest.stop()
        return _fail(args, f"could not join group {herder.settings.group_id}", ExitCode.FAILED)
    return _serve(args, herder, rest, herder.stop)


def _serve(args: argparse.Namespace, herder: Herder, rest: RestServer, stop_herder: object) -> int:
    done = threading.Event()
    interrupted: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        interrupted.append(signum)
        done.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        print(f"{READY_PREFIX}{rest.url} running ({herder.worker_id})", flush=True)
        while not done.wait(0.5):
            if isinstance(herder, DistributedHerder) and herder.error is not None:
                break
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    rest.stop()
    if isinstance(herder, StandaloneHerder):
        herder.stop()
    elif isinstance(herder, DistributedHerder):
        herder.stop()
        if herder.error is not None:
            return _fail(args, f"worker failed: {herder.error}", ExitCode.FAILED)
    print(f"sharetxn sink worker {herder.worker_id} stopped", flush=True)
    if signal.SIGINT in interrupted:
        return int(ExitCode.INTERRUPTED)
    return int(ExitCode.OK)


def _fail(args: argparse.Namespace, message: str, code: ExitCode) -> int:
    report_error(args, message, code)
    return int(code)
