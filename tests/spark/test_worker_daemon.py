"""The worker daemon drops a pip-installed PySpark's own zips from the path, nothing else."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from producer.spark import worker_daemon

pyspark = pytest.importorskip("pyspark")


def test_only_the_installed_packages_own_archives_leave_the_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lib = Path(os.path.realpath(Path(pyspark.__file__).parent)) / "python" / "lib"
    shipped = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip")]
    elsewhere = str(tmp_path / "spark-home" / "python" / "lib" / "pyspark.zip")
    monkeypatch.setattr(sys, "path", [*shipped, elsewhere, *sys.path])
    for p in shipped:
        monkeypatch.setitem(sys.path_importer_cache, p, None)
    assert sorted(worker_daemon.drop_shipped_archives()) == sorted(shipped)
    assert not set(shipped) & set(sys.path)
    assert elsewhere in sys.path  # another Spark's archives stay
    assert not set(shipped) & set(sys.path_importer_cache)
