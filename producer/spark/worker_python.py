"""The Python Spark starts its Python processes with: PySpark from the installed package.

Besides the executors' workers (``producer.spark.worker_daemon``), a driver of a Python
data source starts several Python processes of its own: a daemon that looks up the
installed data sources (at the first ``spark.dataSource.register``), one per planning step
(``load()``'s schema, the read planning of a stream) and the streaming source's runner.
Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` and ``py4j-*-src.zip`` first on each one's
``PYTHONPATH``; Python imports a zip's modules from source (it cannot cache bytecode
there), so every one of those processes compiles PySpark's modules again: about twice the
CPU of an import from the installed package.

``worker_python()`` gives a launcher, ``~/.cache/sharetxn/python-<hash>/python``, that
removes exactly those two archives from ``PYTHONPATH`` when they are the ones shipped inside
the PySpark package this interpreter imports (the same code, importable with cached
bytecode), then runs this interpreter.  ``spark_session`` in ``producer.spark.job`` makes it
``PYSPARK_PYTHON`` unless that is set.  With any other Spark installation (a cluster's
``SPARK_HOME``), on Windows, or when the cache is not writable, it is ``sys.executable``.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import shlex
import sys
from pathlib import Path

from producer.spark.maven import cache_root

_LAUNCHER = """#!/bin/sh
# Runs {python} without PySpark's own archives on PYTHONPATH: they are the installed
# package's, importable with cached bytecode (producer/spark/worker_python.py).
set -f
kept=
IFS=:
for entry in ${{PYTHONPATH-}}; do
  case "$entry" in
    {archives}) ;;
    *) kept="${{kept:+$kept:}}$entry" ;;
  esac
done
unset IFS
if [ -n "$kept" ]; then export PYTHONPATH="$kept"; else unset PYTHONPATH; fi
exec {python} "$@"
"""


def shipped_archives() -> list[str]:
    """PySpark's own zips inside the installed package (empty: no such package)."""
    plain = [p for p in sys.path if not p.endswith(".zip")]
    spec = importlib.machinery.PathFinder.find_spec("pyspark", plain)
    if spec is None or not spec.submodule_search_locations:
        return []
    lib = Path(next(iter(spec.submodule_search_locations))) / "python" / "lib"
    try:
        return sorted(str(p) for p in lib.iterdir() if p.suffix == ".zip")
    except OSError:
        return []


def launcher_text(python: str, archives: list[str]) -> str:
    """The launcher's script: ``archives`` (and their real paths) leave ``PYTHONPATH``."""
    names: list[str] = []
    for path in archives:
        for name in (path, os.path.realpath(path)):
            if name not in names:
                names.append(name)
    return _LAUNCHER.format(
        python=shlex.quote(python), archives="|".join(shlex.quote(n) for n in names)
    )


def worker_python() -> str:
    """The executable for ``PYSPARK_PYTHON`` (see the module doc)."""
    python = sys.executable
    archives = shipped_archives()
    if os.name != "posix" or not archives or not python:
        return python
    text = launcher_text(python, archives)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    launcher = cache_root() / f"python-{digest}" / "python"
    try:
        if not launcher.is_file() or launcher.read_text() != text:
            launcher.parent.mkdir(parents=True, exist_ok=True)
            staging = launcher.with_name(f".python-{os.getpid()}")
            staging.write_text(text)
            staging.chmod(0o755)
            staging.replace(launcher)
    except OSError:
        return python
    return str(launcher)
