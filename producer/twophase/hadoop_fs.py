"""``CheckpointFS`` on Hadoop's FileSystem API, through the JVM of a Spark driver.

Spark writes its own checkpoint files with a ``CheckpointFileManager``
(``org.apache.spark.sql.execution.streaming``): ``FileContextBasedCheckpointFileManager``
where Hadoop has an ``AbstractFileSystem`` for the scheme, else the
``FileSystemBasedCheckpointFileManager``, or the class named by
``spark.sql.streaming.checkpointFileManagerClass`` (for example the abortable-stream manager
of ``spark-hadoop-cloud`` for object stores).  ``createAtomic`` writes a temporary file and
renames it over the target on ``close`` (or, for the abortable variant, completes the
upload only on ``close``), and ``cancel`` leaves the target untouched.  This class asks Spark
for the same manager, with the session's Hadoop configuration, so sharetxn's intents and
resolved markers are written exactly as Spark writes ``commits/N``.

Only the driver's Python process has the JVM (py4j); the source's driver-side reader
reaches this class through ``producer.spark.fs_server``.
"""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaPackage  # type: ignore[import-untyped]
from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]

from producer.twophase.checkpoint_fs import default_lock_key

# Spark 4.1 moved the manager into a ``checkpointing`` subpackage; older releases have it
# one level up.  The first name that resolves to a class is the one in use.
_CFM_NAMES = (
    "org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager",
    "org.apache.spark.sql.execution.streaming.CheckpointFileManager",
)


def _is_not_found(exc: Py4JJavaError) -> bool:
    name = str(exc.java_exception.getClass().getName())
    return name.endswith("FileNotFoundException")


class HadoopFS:
    """Files under one checkpoint root, through Spark's ``CheckpointFileManager``."""

    def __init__(self, jvm: Any, hadoop_conf: Any, root: str) -> None:
        self._jvm = jvm
        self._conf = hadoop_conf
        #: the root as Spark resolves a checkpointLocation (scheme and authority added)
        self.root = self.qualify(root)
        self._manager = self._manager_class().create(
            jvm.org.apache.hadoop.fs.Path(self.root), hadoop_conf
        )

    def qualify(self, location: str) -> str:
        """``location`` as Spark qualifies a checkpointLocation (``fs.defaultFS`` applied)."""
        path = self._jvm.org.apache.hadoop.fs.Path(location)
        fs = path.getFileSystem(self._conf)
        return str(fs.makeQualified(path).toUri().toString())

    @classmethod
    def for_session(cls, spark: Any, root: str) -> HadoopFS:
        """The session's Hadoop configuration, with its SQL settings (as Spark uses it)."""
        conf = spark._jsparkSession.sessionState().newHadoopConf()  # noqa: SLF001 - py4j
        return cls(spark._jvm, conf, root)  # noqa: SLF001

    def _jvm_class(self, name: str) -> Any:
        target = self._jvm
        for part in name.split("."):
            target = getattr(target, part)
        return target

    def _manager_class(self) -> Any:
        """Spark's ``CheckpointFileManager`` companion, wherever this Spark release keeps it."""
        for name in _CFM_NAMES:
            found = self._jvm_class(name)
            if not isinstance(found, JavaPackage):  # py4j's stand-in for an unknown name
                return found
        msg = f"this Spark has no CheckpointFileManager (looked for {', '.join(_CFM_NAMES)})"
        raise RuntimeError(msg)

    def _path(self, path: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(path)

    @property
    def manager_class(self) -> str:
        return str(self._manager.getClass().getName())

    def read(self, path: str) -> bytes | None:
        try:
            stream = self._manager.open(self._path(path))
        except Py4JJavaError as exc:
            if _is_not_found(exc):
                return None
            raise
        try:
            data = self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
        finally:
            stream.close()
        return bytes(data)

    def write_atomic(self, path: str, data: bytes) -> None:
        target = self._path(path)
        self._manager.mkdirs(target.getParent())
        out = self._manager.createAtomic(target, True)  # overwrite if the store can
        try:
            out.write(bytearray(data))
        except BaseException:
            out.cancel()  # the target is left as it was
            raise
        out.close()  # the rename (or the upload's completion) happens here

    def list(self, directory: str) -> list[str]:
        try:
            statuses = self._manager.list(self._path(directory))
        except Py4JJavaError as exc:
            if _is_not_found(exc):
                return []
            raise
        return sorted(str(s.getPath().getName()) for s in statuses if s.isFile())

    def exists(self, path: str) -> bool:
        return bool(self._manager.exists(self._path(path)))

    def delete(self, path: str) -> None:
        self._manager.delete(self._path(path))  # a missing file is fine

    def lock_key(self, location: str) -> str:
        return default_lock_key(location)


def standalone(location: str, conf: dict[str, str] | None = None) -> HadoopFS:
    """A ``HadoopFS`` without a running query: a local Spark JVM for ``sharetxn recover``.

    ``conf`` are Spark settings (``spark.driver.extraClassPath`` for the file system's jars,
    ``spark.hadoop.*`` for its configuration); Spark also reads ``spark-defaults.conf``.
    """
    import os  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from pyspark.sql import SparkSession  # noqa: PLC0415

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master("local[1]").appName("sharetxn-recover")
    for key, value in {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        **(conf or {}),
    }.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return HadoopFS.for_session(spark, location)
