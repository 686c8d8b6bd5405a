"""Java artifacts from Maven Central, resolved once by ``mvn`` into a cache.

The cache is ``$SHARETXN_KAFKA_CACHE`` or ``~/.cache/sharetxn``, shared by the Spark
connector resolution (``producer.spark.kafka_connector``), the reference harness and the
benchmarks.  ``served_versions`` reads an artifact's ``maven-metadata.xml`` to learn which
releases the repository serves.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

#: Where ``served_versions`` looks (``$SHARETXN_MAVEN_REPOSITORY`` overrides it).
MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"
_METADATA_MAX_BYTES = 1 << 20


class MavenError(RuntimeError):
    """An artifact could not be resolved (no mvn, no network, not served)."""


def cache_root() -> Path:
    env = os.environ.get("SHARETXN_KAFKA_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "sharetxn"


def repository() -> str:
    return os.environ.get("SHARETXN_MAVEN_REPOSITORY", MAVEN_CENTRAL).rstrip("/")


def served_versions(group: str, artifact: str, *, timeout_s: float = 15.0) -> list[str]:
    """The versions the repository lists for ``group:artifact`` (its maven-metadata.xml)."""
    url = f"{repository()}/{group.replace('.', '/')}/{artifact}/maven-metadata.xml"
    if not url.startswith(("https://", "http://", "file://")):
        msg = f"not a repository URL: {url}"
        raise MavenError(msg)
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:  # noqa: S310 - checked
            body = answer.read(_METADATA_MAX_BYTES + 1)
    except OSError as exc:
        msg = f"cannot read {url}: {exc}"
        raise MavenError(msg) from exc
    if len(body) > _METADATA_MAX_BYTES:
        msg = f"{url} is larger than {_METADATA_MAX_BYTES} bytes"
        raise MavenError(msg)
    try:
        root = ET.fromstring(body)  # noqa: S314 - bounded, and no entities are expanded
    except ET.ParseError as exc:
        msg = f"{url} is not Maven metadata: {exc}"
        raise MavenError(msg) from exc
    return [v.text.strip() for v in root.iter("version") if v.text and v.text.strip()]


def resolve_with_mvn(
    pom: Path,
    target: Path,
    what: str,
    *,
    properties: dict[str, str] | None = None,
    extra: tuple[str, ...] = (),
    error: type[Exception] = MavenError,
    timeout_s: int = 900,
) -> Path:
    """``target``, holding ``pom``'s dependencies copied by mvn on first use.

    Another process may resolve the same target at once: each works in its own staging
    directory and the first rename wins.
    """
    if (target / ".complete").exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        msg = f"mvn is needed once to resolve {what} into {target} (apt-get install -y maven)"
        raise error(msg)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        cmd = [mvn, "-q", "-B", "-f", str(pom)]
        cmd += [f"-D{k}={v}" for k, v in (properties or {}).items()]
        cmd += ["dependency:copy-dependencies", *extra, f"-DoutputDirectory={staging}"]
        done = subprocess.run(  # noqa: S603 - mvn found on PATH, our own pom
            cmd, capture_output=True, text=True, timeout=timeout_s, check=False
        )
        if done.returncode != 0:
            msg = f"mvn could not resolve {what}:\n{done.stdout}{done.stderr}"
            raise error(msg)
        (staging / ".complete").write_text(what + "\n")
        with contextlib.suppress(OSError):
            staging.rename(target)  # another process may have won the race: keep theirs
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
