"""Where the broker's OpenTelemetry instruments go: Prometheus and OTLP exporters.

An adapter (it opens a socket and starts threads), used by ``sharetxn broker``:

- ``--metrics-port PORT`` serves every instrument at ``http://HOST:PORT/metrics`` in the
  Prometheus text format (OpenTelemetry's Prometheus exporter; instrument names become
  Prometheus names: ``-`` and ``.`` turn into ``_``, counters end in ``_total``);
- ``OTEL_METRICS_EXPORTER=otlp`` (the standard variable; ``OTEL_EXPORTER_OTLP_ENDPOINT`` and
  the other ``OTEL_*`` variables configure it) pushes them with OTLP over HTTP, which needs
  the ``otlp`` extra (``pip install 'sharetxn[otlp]'``).

With neither, no SDK is installed and the instruments cost nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from opentelemetry import metrics

OTLP_HINT = "install it with: pip install 'sharetxn[otlp]'"


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
        from prometheus_client import start_http_server  # noqa: PLC0415

        try:
            server, _thread = start_http_server(port=port, addr=host)
        except OSError as exc:
            msg = f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}"
            raise MetricsExportError(msg) from exc
        endpoint = MetricsEndpoint(host, int(server.server_port))
        readers.append(PrometheusMetricReader())
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
