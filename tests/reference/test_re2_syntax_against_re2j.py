"""``coordinator.group.re2_syntax`` against RE2J itself (the jar Kafka 4.4's broker uses).

A small Java program compiles every pattern of the unit tests' table with
``com.google.re2j.Pattern`` and prints, for each, the names it matches whole
(``matcher(name).matches()``) or the ``PatternSyntaxException``'s description; the table in
``tests/unit/group/test_re2_syntax.py`` must say the same, and so must the Python module.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.reference.kafka import classpath
from tests.unit.group.test_re2_syntax import NAMES, RE2J, outcome

pytestmark = pytest.mark.reference

PROGRAM = """
import java.nio.file.*;
public class Re2jOracle {
  public static void main(String[] a) throws Exception {
    var patterns = Files.readAllLines(Path.of(a[0]));
    var names = Files.readAllLines(Path.of(a[1]));
    for (var p : patterns) {
      try {
        var pattern = com.google.re2j.Pattern.compile(p);
        var out = new StringBuilder("OK");
        for (var n : names) if (pattern.matcher(n).matches()) out.append(' ').append(n);
        System.out.println(out);
      } catch (com.google.re2j.PatternSyntaxException e) {
        System.out.println("ERR " + e.getDescription());
      }
    }
  }
}
"""


def test_the_table_is_re2js(tmp_path: Path) -> None:
    if shutil.which("java") is None:
        pytest.skip("needs a JDK")
    source = tmp_path / "Re2jOracle.java"
    source.write_text(PROGRAM)
    patterns = tmp_path / "patterns.txt"
    patterns.write_text("".join(p + "\n" for p, _ in RE2J))
    names = tmp_path / "names.txt"
    names.write_text("".join(n + "\n" for n in NAMES))
    done = subprocess.run(
        ["java", "-cp", classpath(), str(source), str(patterns), str(names)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == len(RE2J)
    for (pattern, expected), line in zip(RE2J, lines, strict=True):
        java = line[4:] if line.startswith("ERR ") else tuple(line.split()[1:])
        assert java == expected, pattern
        assert outcome(pattern) == java, pattern
