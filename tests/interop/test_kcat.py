"""Debian's kcat (an older librdkafka that negotiates older API versions) against the broker."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from coordinator.launcher import LocalBroker

pytestmark = pytest.mark.interop

KCAT = shutil.which("kcat")


def kcat(*args: str, stdin: str | None = None) -> str:
    assert KCAT is not None
    done = subprocess.run(
        [KCAT, *args], input=stdin, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install -y kcat)")
def test_kcat_produce_and_consume(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    lines = "\n".join(f"line-{i}" for i in range(100)) + "\n"
    kcat("-b", b, "-t", "kc", "-P", "-X", "enable.idempotence=true", stdin=lines)
    out = kcat("-b", b, "-t", "kc", "-C", "-e", "-q", "-X", "isolation.level=read_committed")
    assert sorted(out.split()) == sorted(f"line-{i}" for i in range(100))
    listing = kcat("-b", b, "-L")
    assert 'topic "kc"' in listing


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install -y kcat)")
def test_kcat_with_old_api_versions(broker: LocalBroker) -> None:
    """Cap librdkafka's view of the broker to Kafka 0.11-era requests (non-flexible headers)."""
    b = broker.bootstrap_servers
    old = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.11.0"]
    kcat("-b", b, "-t", "old", "-P", *old, stdin="a\nb\nc\n")
    out = kcat("-b", b, "-t", "old", "-C", "-e", "-q", *old)
    assert sorted(out.split()) == ["a", "b", "c"]
