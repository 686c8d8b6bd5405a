"""Running a broker: in the foreground (``sharetxn broker``) or as ``LocalBroker``.

``LocalBroker`` starts ``sharetxn broker`` in a child process and waits for
its ready line.  A separate process (rather than a thread) keeps the broker's
event loop off the caller's GIL-bound threads (Spark, stock clients) and lets
tests and the demo kill it with SIGKILL and restart it on the same data
directory, exactly as an operator would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from coordinator.broker import BrokerCore
from coordinator.cleaner_worker import ProcessCleanerExecutor
from coordinator.log.data_dir import DataDirError, ensure_meta_properties
from coordinator.log.file_log import FileStorage
from coordinator.log.storage import LogConfig
from coordinator.metrics import (
    BrokerMetrics,
    ClientQuotaMetrics,
    GroupCoordinatorMetrics,
    ShareGroupMetrics,
    ShareTransactionMetrics,
)
from coordinator.metrics_export import install_exporters
from coordinator.open_files import (
    count_partition_dirs,
    is_out_of_files,
    out_of_files_message,
    raise_open_file_limit,
)
from coordinator.protocol.security_gate import SecurityGate
from coordinator.protocol.server import KafkaServer
from coordinator.runtime import LoopClock
from coordinator.security.listeners import listeners_from_config
from coordinator.security.store import FileSecurityStorage, SecurityMetadata
from coordinator.security.tls import server_context
from txn.config import BrokerConfig
from txn.security_config import is_sensitive

READY_PREFIX = "sharetxn broker ready on "
LISTENER_PREFIX = "sharetxn broker listener "
log = logging.getLogger("sharetxn.launcher")


async def serve(
    data_dir: Path,
    host: str,
    port: int,
    config: BrokerConfig,
    *,
    metrics_port: int | None = None,
    metrics_host: str = "127.0.0.1",
    metadata: SecurityMetadata | None = None,
) -> None:
    """Run a broker until SIGTERM/SIGINT; prints the ready line once listening.

    The caller holds the data directory's lock (``coordinator.log.data_dir.DataDirLock``;
    ``sharetxn broker`` takes it before anything is read or written).  Raises
    ``InvalidConfigError`` for listener, TLS, SASL or authorizer settings that cannot be
    served (before anything is bound).
    """
    loop = asyncio.get_running_loop()
    endpoint = None
    if metrics_port is not None or os.environ.get("OTEL_METRICS_EXPORTER"):
        endpoint = install_exporters(metrics_host, metrics_port)
    log.info(
        "sharetxn broker starting in %s with these settings:\n%s",
        data_dir,
        "\n".join(f"\t{key} = {_shown(key, value)}" for key, value in sorted(config.items())),
    )
    data_dir.mkdir(parents=True, exist_ok=True)
    cluster_id = ensure_meta_properties(data_dir, BrokerCore.node_id)
    listeners = listeners_from_config(config, (host, port))
    if metadata is None:
        metadata = SecurityMetadata(FileSecurityStorage(data_dir))
    gate = SecurityGate(config, metadata)
    ssl_contexts = {}
    for listener in listeners:
        gate.check_listener(listener)
        if listener.protocol.uses_tls:
            ssl_contexts[listener.name] = server_context(
                config, listener.name, sasl=listener.protocol.uses_sasl
            )
    open_files = raise_open_file_limit()
    segment_files = config.get_optional_int("sharetxn.log.max.open.files")
    storage = FileStorage(data_dir, LogConfig(), open_files=segment_files)
    log.info(
        "at most %d segment files open at once (open-file limit %d)",
        storage.handles.capacity,
        open_files,
    )
    # The cleaner's copying runs in a worker process; plan and swap stay on this loop.
    cleaner_executor = ProcessCleanerExecutor(loop)
    try:
        core = BrokerCore(storage, LoopClock(loop), config, random.Random(), cleaner_executor)
    except OSError as exc:
        if not is_out_of_files(exc):
            raise
        cleaner_executor.close()
        storage.close()
        partitions = count_partition_dirs(data_dir)
        raise DataDirError(
            out_of_files_message(data_dir, open_files, partitions, storage.handles.capacity)
        ) from exc
    core.cluster_id = cluster_id
    core.add_share_event_listener(ShareGroupMetrics().record)
    core.share.on_txn_metric = ShareTransactionMetrics().record
    core.add_group_event_listener(GroupCoordinatorMetrics().record)
    server = KafkaServer(
        core, host, port, listeners=listeners, gate=gate, ssl_contexts=ssl_contexts
    )
    broker_metrics = BrokerMetrics(
        lambda: {**core.gauges(), "connection-count": server.connection_count}
    )
    server.request_observer = broker_metrics.request
    ClientQuotaMetrics(core.client_quotas.figures)
    await server.start()
    if endpoint is not None:
        print(f"sharetxn broker metrics on {endpoint.url}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    # With `listeners` set, one line per listener comes first (LocalBroker reads them); the
    # ready line stays the only line of a broker started with --listen alone.
    for listener in listeners if config["listeners"] else []:
        bound_host, bound_port = server.bound[listener.name]
        print(
            f"{LISTENER_PREFIX}{listener.name} ({listener.protocol.value}) on "
            f"{bound_host}:{bound_port}",
            flush=True,
        )
    first_host, first_port = server.bound[listeners[0].name]
    print(f"{READY_PREFIX}{first_host or host}:{first_port}", flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop()
        core.close()
        cleaner_executor.close()
        log.info("broker stopped cleanly")


def _shown(key: str, value: object) -> str:
    if is_sensitive(key) and value is not None:
        return "[hidden]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def broker_command(data_dir: str | Path, listen: str, settings: Iterable[str] = ()) -> list[str]:
    """The broker (``python -m coordinator``, the options of ``sharetxn broker``) in a child of
    this interpreter; ``settings`` are ``key=value``."""
    cmd = [sys.executable, "-m", "coordinator"]
    cmd += ["--data-dir", str(data_dir), "--listen", listen]
    for assignment in settings:
        cmd += ["--set", assignment]
    return cmd


def terminate(process: subprocess.Popen[str], timeout_s: float) -> None:
    """SIGTERM ``process`` and wait for it; SIGKILL it after ``timeout_s``."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class LocalBroker:
    """A broker in a child process, for tests, the demo and Spark.

    ``with LocalBroker() as broker: broker.bootstrap_servers`` gives
    ``127.0.0.1:PORT``.  ``data_dir=None`` uses a temporary directory removed
    on exit.  ``kill()`` sends SIGKILL; ``restart()`` starts a new process on
    the same data directory and port.  ``open_files`` runs it under that
    ``ulimit -n``.
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        port: int = 0,
        config: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        startup_timeout_s: float = 30.0,
        extra_args: list[str] | None = None,
        open_files: int | None = None,
    ) -> None:
        self._own_dir = data_dir is None
        self.data_dir = (
            Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="sharetxn-"))
        )
        self.host = host
        self.port = port
        self.config = dict(config or {})
        self.startup_timeout_s = startup_timeout_s
        self.extra_args = list(extra_args or [])  # more `sharetxn broker` options
        # The child's open-file limit, soft and hard (``ulimit -n``); None: this process's.
        self.open_files = open_files
        self.process: subprocess.Popen[str] | None = None
        self._log_lines: list[str] = []
        self._pump: threading.Thread | None = None
        #: listener name -> (host, port), from the broker's listener lines
        self.listener_addresses: dict[str, tuple[str, int]] = {}

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def listener_bootstrap(self, name: str) -> str:
        """``HOST:PORT`` of one listener (``listeners`` config), e.g. ``"SASL_SSL"``."""
        host, port = self.listener_addresses[name.upper()]
        return f"{host or self.host}:{port}"

    def start(self) -> LocalBroker:
        settings = [f"{key}={value}" for key, value in self.config.items()]
        cmd = broker_command(self.data_dir, f"{self.host}:{self.port}", settings)
        cmd += self.extra_args
        if self.open_files is not None:
            # A shell sets the limit and execs the broker (thread-safe, unlike preexec_fn).
            cmd = ["/bin/sh", "-c", f'ulimit -n {int(self.open_files)} && exec "$@"', "sh", *cmd]
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        ready = threading.Event()
        seen_ready = threading.Event()
        stdout = self.process.stdout
        assert stdout is not None

        def pump() -> None:
            for line in stdout:
                self._log_lines.append(line.rstrip("\n"))
                if line.startswith(LISTENER_PREFIX):
                    name, _proto, _on, address = line[len(LISTENER_PREFIX) :].split()
                    l_host, _sep, l_port = address.rpartition(":")
                    self.listener_addresses[name] = (l_host, int(l_port))
                if line.startswith(READY_PREFIX):
                    self.port = int(line.strip().rsplit(":", 1)[1])
                    seen_ready.set()
                    ready.set()
            ready.set()  # the process ended (its output did)

        self._pump = threading.Thread(target=pump, daemon=True, name="sharetxn-broker-log")
        self._pump.start()
        ready.wait(self.startup_timeout_s)
        if not seen_ready.is_set() or self.process.poll() is not None:
            output = "\n".join(self._log_lines[-30:])
            self.stop()
            msg = f"broker did not start within {self.startup_timeout_s}s:\n{output}"
            raise RuntimeError(msg)
        return self

    @property
    def output(self) -> list[str]:
        """Lines the broker process printed (its log)."""
        return list(self._log_lines)

    def wait_for_output(self, text: str, timeout_s: float = 10.0) -> bool:
        """Whether a line containing ``text`` is printed within ``timeout_s`` (logs arrive late)."""
        deadline = time.monotonic() + timeout_s
        while True:
            if any(text in line for line in self._log_lines):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL the broker: no flush, no clean shutdown."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reap()

    def _reap(self) -> None:
        """Collect the log pump and close the pipe of an exited process."""
        if self._pump is not None:
            self._pump.join(5)
            self._pump = None
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM and wait for a clean shutdown (SIGKILL after the timeout)."""
        if self.process is None:
            return
        terminate(self.process, timeout_s)
        self._reap()

    def restart(self) -> LocalBroker:
        self.stop()
        return self.start()

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
