"""The demo's class-data archive: made by one driver, adopted later, never trusted blindly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from producer.spark.class_archive import (
    SHORT_LIVED,
    STALE_TMP_S,
    ClassArchive,
    driver_java_options,
)


def _dead_group() -> int:
    """A process group id that no process has (a child that has exited, reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    child.wait()
    return child.pid


def test_no_archive_yet_gives_the_short_lived_options_only(tmp_path: Path) -> None:
    archive = ClassArchive(tmp_path / "spark-x.jsa")
    options = driver_java_options(archive)
    assert options.split()[: len(SHORT_LIVED)] == list(SHORT_LIVED)
    assert "SharedArchiveFile" not in options
    target = archive.dump_target()
    assert target is not None and target.parent == tmp_path
    assert f"-XX:ArchiveClassesAtExit={target}" in driver_java_options(archive, dump_to=target)


def test_a_finished_dump_is_adopted_once_its_jvm_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = ClassArchive(tmp_path / "spark-x.jsa")
    monkeypatch.setattr(ClassArchive, "usable", lambda self: self.ready)
    target = archive.dump_target()
    assert target is not None
    target.write_bytes(b"archive")
    archive.note_dumper(target, os.getpgrp())  # still running: left alone
    archive.adopt()
    assert target.exists() and not archive.ready
    archive.note_dumper(target, _dead_group())
    archive.adopt()
    assert archive.ready and not target.exists()
    assert archive.dump_target() is None  # made once
    assert list(tmp_path.iterdir()) == [archive.path]


def test_an_ownerless_dump_is_removed_when_stale(tmp_path: Path) -> None:
    archive = ClassArchive(tmp_path / "spark-x.jsa")
    dumped = tmp_path / "spark-x.jsa.abc.tmp"
    dumped.write_bytes(b"half")
    archive.adopt()
    assert dumped.exists()
    old = time.time() - STALE_TMP_S - 1
    os.utime(dumped, (old, old))
    archive.adopt()
    assert not dumped.exists() and not archive.ready


def test_dumps_left_by_other_environments_are_removed(tmp_path: Path) -> None:
    """A venv's first run leaves a dump for its next run; once that venv is gone (or the
    dump's writer died long ago with no note of its jars), the dump is removed."""
    cache = tmp_path / "cds"
    cache.mkdir()
    gone, kept_jars = tmp_path / "gone-venv-jars", tmp_path / "kept-venv-jars"
    kept_jars.mkdir()
    other = ClassArchive(cache / "spark-a.jsa", gone)
    kept = ClassArchive(cache / "spark-b.jsa", kept_jars)
    dumps = {}
    for name, owner in ((other, _dead_group()), (kept, _dead_group())):
        target = name.dump_target()
        assert target is not None
        target.write_bytes(b"archive")
        name.note_dumper(target, owner)
        dumps[name.path.name] = target
    running = ClassArchive(cache / "spark-c.jsa", kept_jars).dump_target()
    assert running is not None
    running.write_bytes(b"half")
    ClassArchive(cache / "spark-c.jsa").note_dumper(running, os.getpgrp())
    orphan_owner = cache / "spark-d.jsa.0123.tmp.owner"
    orphan_owner.write_text(str(_dead_group()))
    unnoted = cache / "spark-e.jsa.4567.tmp"
    unnoted.write_bytes(b"old")
    old = time.time() - STALE_TMP_S - 1
    os.utime(unnoted, (old, old))

    ClassArchive(cache / "spark-new.jsa", kept_jars).dump_target()

    left = {p.name for p in cache.iterdir()}
    assert dumps["spark-a.jsa"].name not in left  # its venv is gone
    assert dumps["spark-b.jsa"].name in left  # its venv's next run adopts it
    assert running.name in left  # still being written
    assert orphan_owner.name not in left and unnoted.name not in left
    assert not any(n.startswith("spark-a.jsa") for n in left)


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on the PATH")
def test_a_truncated_archive_is_removed_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    made = tmp_path / "made.jsa"
    subprocess.run(
        ["java", f"-XX:ArchiveClassesAtExit={made}", "-Xlog:cds=off", "-version"],
        capture_output=True,
        check=True,
    )
    whole = ClassArchive(tmp_path / "whole.jsa")
    shutil.copy(made, whole.path)
    assert f"-XX:SharedArchiveFile={whole.path}" in driver_java_options(whole)
    truncated = ClassArchive(tmp_path / "truncated.jsa")
    truncated.path.write_bytes(made.read_bytes()[: made.stat().st_size // 2])
    assert "SharedArchiveFile" not in driver_java_options(truncated)  # it crashes the JVM
    assert not truncated.path.exists()  # made again by a later run


def test_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHARETXN_CDS", "0")
    assert ClassArchive.find() is None
    assert "SharedArchiveFile" not in driver_java_options(None)


def test_archives_of_spark_jars_that_are_gone_are_pruned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ClassArchive, "usable", lambda self: self.ready)
    jars = tmp_path / "venv" / "jars"
    jars.mkdir(parents=True)
    cds = tmp_path / "cds"
    cds.mkdir()
    archive = ClassArchive(cds / "spark-new.jsa", jars)
    gone, kept, unnoted = cds / "spark-gone.jsa", cds / "spark-kept.jsa", cds / "spark-old.jsa"
    for path, noted in ((gone, tmp_path / "deleted-venv"), (kept, jars), (unnoted, None)):
        path.write_bytes(b"archive")
        path.with_name(f"{path.name}.checked").write_text("1:1")
        if noted is not None:
            path.with_name(f"{path.name}.jars").write_text(str(noted))
    target = archive.dump_target()
    assert target is not None
    assert sorted(p.name for p in cds.iterdir()) == [
        "spark-kept.jsa",
        "spark-kept.jsa.checked",
        "spark-kept.jsa.jars",
        f"{target.name}.jars",  # the dump notes its jars too
        "spark-old.jsa",
        "spark-old.jsa.checked",
    ]
    target.write_bytes(b"made")
    assert archive.install(target)
    assert (cds / "spark-new.jsa.jars").read_text() == str(jars)


def test_the_same_spark_elsewhere_makes_another_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An archive maps only with the class path it was made with: a virtual environment's
    # copy of the same Spark (same jar names and sizes) must not reuse this one's.
    pytest.importorskip("pyspark")
    here = ClassArchive.find()
    if here is None or here.jars is None:
        pytest.skip("no Java runtime or Spark jars here")
    copy = tmp_path / "spark" / "jars"
    copy.mkdir(parents=True)
    for jar in here.jars.glob("*.jar"):
        with (copy / jar.name).open("wb") as f:
            f.truncate(jar.stat().st_size)  # sparse: same name, same size
    monkeypatch.setenv("SPARK_HOME", str(copy.parent))
    there = ClassArchive.find()
    assert there is not None and there.jars == copy.resolve()
    assert there.path != here.path
