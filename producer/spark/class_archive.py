"""Faster starts of short-lived Spark drivers: C1 only, serial GC, a class-data archive.

A local Spark driver loads some 13,000 classes and compiles the hot ones before its first
batch; on two cores that is most of the time ``sharetxn demo`` spends in its two drivers.
``driver_java_options`` gives the JVM options that make such a driver start faster:

- ``-XX:TieredStopAtLevel=1 -XX:+UseSerialGC``: only the quick C1 compiler and one GC
  thread (the tests run every JVM so, see tests/conftest.py);
- an application class-data sharing archive (AppCDS, JDK 13+): the classes Spark loaded
  in an earlier run, mapped from ``~/.cache/sharetxn/cds/`` instead of read from the
  jars, parsed and verified again.

The archive is made by a driver that exits normally (``-XX:ArchiveClassesAtExit`` into a
temporary file) and installed by ``ClassArchive.adopt`` once that JVM is gone (by a later
run when the JVM is still writing it), with a rename and after a ``java -version`` that
maps it: a driver never sees a partial archive (one crashes the JVM).  A missing, stale
or foreign archive never fails a driver: without ``-Xshare:on`` a JVM that cannot use it
runs without it.  Its name hashes the Java runtime and the Spark jars with their
directory, so another Java, Spark or virtual environment makes another archive (the class
path must be the one the archive was made with, or the JVM ignores the archive).
``SHARETXN_CDS=0`` turns the archive off.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from producer.spark.maven import cache_root

log = logging.getLogger(__name__)

#: For a driver that lives a minute, not a day: quick compiles, one GC thread.
SHORT_LIVED = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData")
#: The archive's warnings (classes it cannot hold) are not the user's business.
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
#: A temporary archive older than this belongs to a dump that never finished.
STALE_TMP_S = 600.0


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def _fingerprint() -> tuple[str, Path] | None:
    """What the archive depends on: the Java runtime and Spark's jars, with the jars'
    directory (an archive maps only with the class path it was made with); None: unknown."""
    try:
        import pyspark  # noqa: PLC0415 - optional dependency
    except ImportError:
        return None
    java = _java()
    if java is None:
        return None
    parts = [pyspark.__version__]
    try:
        real = os.path.realpath(java)
        st = os.stat(real)
        parts.append(f"{real}:{st.st_size}:{st.st_mtime_ns}")
        # A JAVA_HOME launcher script (producer.spark.java) names the runtime it runs.
        if st.st_size < 4096:
            parts.append(Path(real).read_text(errors="replace"))
        home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
        jars = (home / "jars").resolve()
        parts.append(str(jars))
        parts.extend(sorted(f"{p.name}:{p.stat().st_size}" for p in jars.glob("*.jar")))
    except OSError:
        return None
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16], jars


@dataclass(frozen=True)
class ClassArchive:
    """The class-data archive of this Java and Spark, in ``~/.cache/sharetxn/cds``."""

    path: Path
    #: The Spark jars it is made for (noted beside it: an archive whose jars are gone, a
    #: deleted virtual environment's, is removed when another is made).
    jars: Path | None = None

    @classmethod
    def find(cls) -> ClassArchive | None:
        """The archive's place for this machine's Java and Spark (None: turned off)."""
        if os.environ.get("SHARETXN_CDS", "1").strip().lower() in ("0", "false", "no", "off"):
            return None
        found = _fingerprint()
        if found is None:
            return None
        fingerprint, jars = found
        return cls(cache_root() / "cds" / f"spark-{fingerprint}.jsa", jars)

    @property
    def ready(self) -> bool:
        try:
            return self.path.stat().st_size > 0
        except OSError:
            return False

    @property
    def _checked(self) -> Path:
        return _checked(self.path)

    def _stamp(self) -> str:
        st = self.path.stat()
        return f"{st.st_size}:{st.st_mtime_ns}"

    def usable(self) -> bool:
        """The archive exists and a JVM maps it (a truncated one crashes the JVM).

        Checked with ``java -version`` once per archive file (its size and time are noted
        beside it); an archive that fails the check is removed, to be made again.
        """
        if not self.ready:
            return False
        try:
            stamp = self._stamp()
            if self._checked.read_text() == stamp:
                return True
        except OSError:
            pass
        java = _java()
        if java is None:
            return False
        # A JVM that crashes on a bad archive writes hs_err_pid*.log: into a scratch
        # directory, never the user's working directory.
        scratch = tempfile.mkdtemp(prefix="sharetxn-cds-check-")
        try:
            done = subprocess.run(  # noqa: S603 - the Java runtime Spark uses
                [
                    java,
                    f"-XX:SharedArchiveFile={self.path}",
                    f"-XX:ErrorFile={os.path.join(scratch, 'hs_err_pid%p.log')}",
                    *QUIET,
                    "-version",
                ],
                capture_output=True,
                timeout=60,
                check=False,
                cwd=scratch,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.info("class-data archive not checked: %s", exc)
            return False
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if done.returncode != 0:
            log.warning("class-data archive %s is unusable; it will be made again", self.path)
            with contextlib.suppress(OSError):
                self.path.unlink()
            return False
        with contextlib.suppress(OSError):
            self._checked.write_text(stamp)
        return True

    def use_options(self) -> list[str]:
        """Options for a driver that maps the archive (nothing when there is none yet)."""
        return [f"-XX:SharedArchiveFile={self.path}"] if self.usable() else []

    def dump_target(self) -> Path | None:
        """A temporary file for a driver to write the archive into at its exit, or None."""
        self.adopt()
        if self.ready:
            return None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        self.prune()
        target = self.path.with_name(f"{self.path.name}.{uuid.uuid4().hex[:12]}.tmp")
        if self.jars is not None:
            with contextlib.suppress(OSError):
                _jars_note(target).write_text(str(self.jars))
        return target

    def prune(self) -> None:
        """Remove what other archives left behind (~170 MB each): archives whose Spark jars
        are gone (a deleted virtual environment's), dumps for such archives or whose writer
        died long ago without a note of its jars, and notes of dumps that never started."""
        now = time.time()
        for other in self.path.parent.glob("spark-*.jsa"):
            jars = _noted_jars(other)
            if other != self.path and jars and not os.path.isdir(jars):
                _remove(other, _checked(other), _jars_note(other))
        for dumped in self.path.parent.glob("spark-*.jsa.*.tmp"):
            if dumped.name.startswith(f"{self.path.name}."):
                continue  # this archive's: adopt() decides
            group = _dumper(dumped)
            if group is not None and _alive(group):
                continue
            jars = _noted_jars(dumped)
            try:
                old = now - dumped.stat().st_mtime > STALE_TMP_S
            except OSError:
                continue
            if (jars and not os.path.isdir(jars)) or (not jars and old):
                _remove(dumped, _owner(dumped), _jars_note(dumped))
        for owner in self.path.parent.glob("spark-*.jsa.*.tmp.owner"):
            dumped = owner.with_name(owner.name.removesuffix(".owner"))
            group = _dumper(dumped)
            if not dumped.exists() and (group is None or not _alive(group)):
                _remove(owner, _jars_note(dumped))

    def note_dumper(self, dumped: Path, process_group: int) -> None:
        """Driver ``process_group`` writes ``dumped`` when its JVM exits."""
        with contextlib.suppress(OSError):
            _owner(dumped).write_text(str(process_group))

    def adopt(self) -> None:
        """Install a finished dump (its JVM is gone); remove dumps that never finished.

        Never waits: a JVM still writing its archive (that takes seconds after the
        driver's Python process exited) leaves it to the next run.
        """
        now = time.time()
        for dumped in self.path.parent.glob(f"{self.path.name}.*.tmp"):
            owner = _owner(dumped)
            group = _dumper(dumped)
            if group is not None and not _alive(group):
                self.install(dumped)
            elif group is None or self.ready:
                with contextlib.suppress(OSError):
                    if now - dumped.stat().st_mtime > STALE_TMP_S:
                        dumped.unlink()
            if not dumped.exists():
                _remove(owner, _jars_note(dumped))

    def install(self, dumped: Path) -> bool:
        """Make ``dumped`` (written by a JVM that has exited) the archive, if it maps."""
        try:
            if dumped.stat().st_size > 0 and not self.ready:
                os.replace(dumped, self.path)
                _remove(_jars_note(dumped))
                usable = self.usable()
                if usable and self.jars is not None:
                    _jars_note(self.path).write_text(str(self.jars))
                return usable
        except OSError as exc:
            log.info("class-data archive not installed: %s", exc)
        with contextlib.suppress(OSError):
            dumped.unlink()
        return False


def _checked(archive: Path) -> Path:
    return archive.with_name(f"{archive.name}.checked")


def _jars_note(archive: Path) -> Path:
    return archive.with_name(f"{archive.name}.jars")


def _owner(dumped: Path) -> Path:
    return dumped.with_name(f"{dumped.name}.owner")


def _dumper(dumped: Path) -> int | None:
    """The process group writing ``dumped`` (None: not noted)."""
    try:
        return int(_owner(dumped).read_text())
    except (OSError, ValueError):
        return None


def _noted_jars(archive: Path) -> str:
    """The Spark jars' directory noted beside an archive or a dump ("" when none)."""
    try:
        return _jars_note(archive).read_text().strip()
    except OSError:
        return ""


def _remove(*paths: Path) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


def _alive(process_group: int) -> bool:
    try:
        os.killpg(process_group, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's: alive as far as we can tell
    return True


def driver_java_options(archive: ClassArchive | None, *, dump_to: Path | None = None) -> str:
    """``spark.driver.extraJavaOptions`` for a short-lived driver."""
    options = list(SHORT_LIVED)
    if archive is not None:
        if dump_to is not None:
            options.append(f"-XX:ArchiveClassesAtExit={dump_to}")
        else:
            options.extend(archive.use_options())
    options.extend(QUIET)
    return " ".join(options)
