"""The metrics exporters' errors (the exporters themselves run in integration tests)."""

from __future__ import annotations

import sys

import pytest

from coordinator.metrics_export import MetricsExportError, install_exporters


def test_otlp_without_its_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.metric_exporter", None)
    with pytest.raises(MetricsExportError, match=r"pip install 'sharetxn\[otlp\]'"):
        install_exporters("127.0.0.1", None)
