"""A PySpark worker daemon that forks workers with sharetxn already imported.

Spark starts each executor's Python workers by forking ``python -m pyspark.daemon``;
every forked worker then imports what its task needs (the source's reader, the
clients, pyarrow), and before every task PySpark calls ``importlib.invalidate_caches``,
which re-reads the directory of every zip archive on ``sys.path``.  With a
pip-installed PySpark, Spark puts its own copies of PySpark and Py4J (``pyspark.zip``,
``py4j-*-src.zip``) first on the workers' path: they are imported from source (no
cached bytecode in a zip) and the 3 MB archive is re-read before each task.  Measured
on two cores, that was more than half of the Python workers' time in a batch.

Set ``spark.python.daemon.module=producer.spark.worker_daemon`` (``spark_session`` in
``producer.spark.job`` does): this daemon

- drops those two archives from ``sys.path`` when they are the ones shipped inside the
  installed PySpark package (the same code, importable with cached bytecode);
- imports the modules a ``kafka-share`` read task and an ``ExactlyOnce`` write task use,
  once, before forking;
- then runs PySpark's own daemon.

With any other Spark installation (a cluster's ``SPARK_HOME``) the archives stay.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import os
import sys

PRELOAD = (
    "pyarrow",
    "pyspark.worker",
    "pyspark.sql.worker.plan_data_source_read",
    "pyspark.sql.pandas.serializers",
    "producer.spark.source",
    "producer.spark.sink",
    # producer.spark.source imports the clients only where a read task uses them
    "producer.consumer.share_consumer",
    "producer.produce.transactional_producer",
)


def _pip_pyspark_dir() -> str | None:
    """The installed PySpark package outside any zip archive, if there is one."""
    plain = [p for p in sys.path if not p.endswith(".zip")]
    spec = importlib.machinery.PathFinder.find_spec("pyspark", plain)
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.realpath(next(iter(spec.submodule_search_locations)))


def drop_shipped_archives() -> list[str]:
    """Remove PySpark's own zips from ``sys.path`` if the package is installed; returns them."""
    package = _pip_pyspark_dir()
    if package is None:
        return []
    lib = os.path.join(package, "python", "lib")
    dropped = [
        p for p in sys.path if p.endswith(".zip") and os.path.dirname(os.path.realpath(p)) == lib
    ]
    for p in dropped:
        sys.path.remove(p)
        sys.path_importer_cache.pop(p, None)
    return dropped


def preload() -> None:
    for name in PRELOAD:
        with contextlib.suppress(ImportError):  # optional pieces stay lazy
            importlib.import_module(name)


def main() -> None:
    drop_shipped_archives()
    preload()
    import pyspark.daemon  # noqa: PLC0415 - reads sys.argv (the worker module) on import

    pyspark.daemon.manager()  # type: ignore[no-untyped-call,unused-ignore]


if __name__ == "__main__":
    main()
