"""Where the broker's OpenTelemetry instruments go: Prometheus and OTLP exporters.

An adapter (it opens a socket and starts threads), used by ``sharetxn broker``:

- ``--metrics-port PORT`` serves every instrument at ``http://HOST:PORT/metrics`` in the
  Prometheus text format (OpenTelemetry's Prometheus exporter; instrument names become
  Prometheus names prefixed ``sharetxn_``: ``-`` and ``.`` turn into ``_``, counters end
  in ``_total``); ``/`` answers a hint, any other path 404;
- ``OTEL_METRICS_EXPORTER=otlp`` (the standard variable; ``OTEL_EXPORTER_OTLP_ENDPOINT`` and
  the other ``OTEL_*`` variables configure it) pushes them with OTLP over HTTP, which needs
  the ``otlp`` extra (``pip install 'sharetxn[otlp]'``).

With neither, no SDK is installed and the instruments cost nothing.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from opentelemetry import metrics

OTLP_HINT = "install it with: pip install 'sharetxn[otlp]'"
PROMETHEUS_PREFIX = "sharetxn"
"""Every exported Prometheus name starts ``sharetxn_`` (``sharetxn_request_total``)."""
METRICS_PATH = "/metrics"

_App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class MetricsExportError(Exception):
    """An exporter asked for cannot be started (a missing package, a port in use)."""


@dataclass(frozen=True, slots=True)
class MetricsEndpoint:
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"


def install_exporters(host: str, port: int | None) -> MetricsEndpoint | None:
    """Install a global MeterProvider with the exporters asked for; the Prometheus endpoint."""
    from opentelemetry.sdk.metrics import MeterProvider  # noqa: PLC0415 - only when exporting
    from opentelemetry.sdk.metrics.export import (  # noqa: PLC0415
        MetricReader,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.resources import Resource  # noqa: PLC0415

    readers: list[MetricReader] = []
    endpoint = None
    if port is not None:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader  # noqa: PLC0415

        try:
            bound = _serve_metrics(host, port)
        except OSError as exc:
            msg = f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}"
            raise MetricsExportError(msg) from exc
        endpoint = MetricsEndpoint(host, bound)
        readers.append(PrometheusMetricReader(prefix=PROMETHEUS_PREFIX))
    wanted = {e.strip() for e in os.environ.get("OTEL_METRICS_EXPORTER", "").split(",")}
    if "otlp" in wanted:
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415
                OTLPMetricExporter,
            )
        except ImportError as exc:
            msg = f"OTEL_METRICS_EXPORTER=otlp needs the OTLP exporter: {OTLP_HINT}"
            raise MetricsExportError(msg) from exc
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    if readers:
        resource = Resource.create({"service.name": "sharetxn-broker"})
        metrics.set_meter_provider(MeterProvider(metric_readers=readers, resource=resource))
    return endpoint


def _serve_metrics(host: str, port: int) -> int:
    """Serve the default Prometheus registry at /metrics in a daemon thread; the port."""
    from prometheus_client import make_wsgi_app  # noqa: PLC0415
    from prometheus_client.exposition import ThreadingWSGIServer  # noqa: PLC0415

    class Server(ThreadingWSGIServer):
        address_family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]

    server = make_server(
        host, port, _only_metrics(make_wsgi_app()), Server, handler_class=_QuietHandler
    )
    threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
    return int(server.server_port)


def _only_metrics(metrics_app: _App) -> _App:
    """``metrics_app`` at /metrics; a hint at /, 404 anywhere else."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        if path == METRICS_PATH:
            return metrics_app(environ, start_response)
        hint = f"sharetxn broker metrics: GET {METRICS_PATH} (Prometheus text format)\n"
        status = "200 OK" if path == "/" else "404 Not Found"
        if path != "/":
            hint = f"not found: {path}; {hint}"
        body = hint.encode()
        start_response(
            status,
            [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))],
        )
        return [body]

    return app


class _QuietHandler(WSGIRequestHandler):
    """No access log on stderr for every scrape."""

    def log_message(self, format: str, *args: Any) -> None:
        pass
