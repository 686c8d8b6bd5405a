"""Who builds the coordinator runtimes, and who writes the coordinator logs.

As in Kafka, the broker wires each ``CoordinatorRuntime`` and the runtime owns the shard: a
coordinator is handed its runtime, never builds one, and never appends to a log itself -- its
records reach the log through ``runtime.write`` and its state changes only in replay.  These
read the source (no imports of it), like ``test_layout``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("txn", "coordinator", "producer", "recovery", "chaos")

# The modules that may call ``CoordinatorRuntime(...)``.
RUNTIME_BUILDERS = {
    "coordinator/assembly.py",  # the composition root
}

# The coordinators whose writes go through their runtime only.
RUNTIME_WRITERS = (
    "coordinator/txn_coordinator.py",
    "coordinator/txn_shard.py",
    "coordinator/share",
    "coordinator/group",
)

# A receiver that names a log: ``log``, ``self._log``, ``group_log``, ``runtime.partition_log(0)``.
_LOG_RECEIVER = re.compile(r"(^|[._])log(\(.*\))?$|_log(\(.*\))?$")
_LOG_WRITES = ("append", "flush", "truncate_to", "replace_segments")


def _calls(path: Path) -> Iterator[ast.Call]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            yield node


def _callee(func: ast.expr) -> str:
    """The called name: ``f`` for ``f(...)``, ``m.f(...)`` and ``f[T](...)``."""
    if isinstance(func, ast.Subscript):
        func = func.value
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _sources(*roots: str) -> Iterator[tuple[str, Path]]:
    for root in roots:
        path = ROOT / root
        for found in [path] if path.suffix == ".py" else sorted(path.rglob("*.py")):
            yield str(found.relative_to(ROOT)), found


def test_only_the_composition_root_builds_coordinator_runtimes() -> None:
    found = sorted(
        f"{rel}:{call.lineno}"
        for rel, path in _sources(*PACKAGES)
        if rel not in RUNTIME_BUILDERS
        for call in _calls(path)
        if _callee(call.func) == "CoordinatorRuntime"
    )
    assert not found, "build the runtime in coordinator/assembly.py:\n" + "\n".join(found)


def test_the_composition_root_still_builds_the_runtimes() -> None:
    """Every listed builder builds one (a stale entry is removed, not kept)."""
    idle = sorted(
        rel
        for rel in RUNTIME_BUILDERS
        if not any(_callee(call.func) == "CoordinatorRuntime" for call in _calls(ROOT / rel))
    )
    assert not idle, f"no CoordinatorRuntime(...) left in {idle}: remove them from the list"


def test_converted_coordinators_write_their_logs_only_through_the_runtime() -> None:
    found = []
    for rel, path in _sources(*RUNTIME_WRITERS):
        for call in _calls(path):
            func = call.func
            if _callee(func) == "append_durably":
                found.append(f"{rel}:{call.lineno} append_durably")
            elif isinstance(func, ast.Attribute) and func.attr in _LOG_WRITES:
                receiver = ast.unparse(func.value)
                if _LOG_RECEIVER.search(receiver):
                    found.append(f"{rel}:{call.lineno} {receiver}.{func.attr}")
    assert not found, "write through runtime.write:\n" + "\n".join(found)
