"""The source tree's shape: import layering without cycles, file sizes, constants defined once.

These read the source (no imports of it), so they are fast and say exactly which line breaks
a rule.  docs/design.md ("Layers") explains the layering this test holds.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("txn", "coordinator", "producer", "recovery", "chaos")

# Lowest first.  A module may import modules of its own layer or of a lower one.  A module
# belongs to the layer of the longest prefix that names it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("txn",),
    ("coordinator.log",),
    (
        "coordinator.partition",
        "coordinator.partition_limits",
        "coordinator.producer_state",
        "coordinator.topics",
        "coordinator.reserved_topics",
        "coordinator.log_settings",
        "coordinator.log_tasks",
        "coordinator.broker_dynamic",
        "coordinator.producer_ids",
        "coordinator.marker_channel",
        "coordinator.metrics",
        "coordinator.runtime",
        "coordinator.cleaner_worker",
        "coordinator.shard_runtime",
        "coordinator.security",
        "coordinator.quotas",
    ),
    ("coordinator.share",),
    (
        "coordinator.group",
        "coordinator.group_admin",
        "coordinator.share_fetch",
        "coordinator.share_dead_letters",
        "coordinator.txn_coordinator",
        "coordinator.txn_results",
        "coordinator.internal_producers",
        "coordinator.txn_shard",
    ),
    ("coordinator.assembly", "coordinator.broker"),  # the composition root, the broker core
    ("coordinator.protocol",),
    ("coordinator.launcher", "coordinator.metrics_export", "coordinator.command", "coordinator"),
    ("producer.protocol",),  # connections, routing, records, the vocabulary the roles share
    ("producer.produce", "producer.consumer", "producer.admin"),  # the roles
    ("producer",),  # the package's exports
    ("producer.twophase",),  # checkpoint files, intents, audit log, resume-and-commit
    ("producer.sink", "producer.spark"),
    ("recovery",),  # `sharetxn txn` and `sharetxn recover`: the operator's side
    ("chaos",),
    ("chaos.cli",),  # the `sharetxn` command line: every command, imported by nothing below
)

# The one command-line package; nothing outside it imports it.
CLI = "chaos.cli"

# Files that must shrink below MAX_LINES (issue: split them along their jobs).  A file not
# listed may not grow past the limit; a listed file may not grow at all.
MAX_LINES = 900
OVERSIZED: dict[str, int] = {}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(tree: ast.Module, name: str, is_package: bool) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import, those under ``if TYPE_CHECKING:`` included.

    A type-only import is a dependency too: it ties the modules' types together, and a cycle
    through one is a cycle as soon as the annotation is evaluated (``get_type_hints``).
    """
    package = name if is_package else name.rpartition(".")[0]
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                yield f"{module}.{alias.name}", node.lineno
            yield module, node.lineno
        stack.extend(ast.iter_child_nodes(node))


def _graph() -> dict[str, dict[str, int]]:
    modules = _modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges: dict[str, int] = {}
        tree = ast.parse(path.read_text(), str(path))
        seen_from: set[int] = set()
        for target, line in _imports(tree, name, path.name == "__init__.py"):
            if target not in modules or target == name or name.startswith(target + "."):
                continue  # outside the tree, itself, or its own package (always imported first)
            # ``from pkg import mod`` imports ``mod``: do not also count ``pkg``.
            if line in seen_from and any(t.startswith(target + ".") for t in edges):
                continue
            edges.setdefault(target, line)
            seen_from.add(line)
        graph[name] = edges
    return graph


def _layer(module: str) -> int:
    best, best_len = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    assert best >= 0, f"{module} is in no layer: add it to LAYERS"
    return best


def test_no_import_cycles() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, {}):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not cycles, f"import cycles: {cycles}"


def test_imports_follow_the_layers() -> None:
    graph = _graph()
    upward = [
        f"{_source(name)}:{line} {name} ({_layer(name)}) imports {target} ({_layer(target)})"
        for name, edges in sorted(graph.items())
        for target, line in sorted(edges.items())
        if _layer(target) > _layer(name)
    ]
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def _source(module: str) -> str:
    return str(_modules()[module].relative_to(ROOT))


SIZED = (*PACKAGES, "tests", "bench", "dev")


def test_every_python_directory_is_sized() -> None:
    """A new top-level directory of Python code is under the size limit too."""
    tops = {
        top.name
        for top in ROOT.iterdir()
        if top.is_dir()
        and not top.name.startswith(".")
        and top.name not in ("build", "dist", "data")  # .gitignore's
        and next(top.rglob("*.py"), None)
    }
    assert tops <= set(SIZED), f"add to SIZED: {sorted(tops - set(SIZED))}"


def test_no_file_over_the_size_limit() -> None:
    """Every Python file of the tree: the packages, tests, benchmarks and dev scripts."""
    too_big = []
    for package in SIZED:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            lines = len(path.read_text().splitlines())
            limit = OVERSIZED.get(rel, MAX_LINES)
            if lines > limit:
                too_big.append(f"{rel}: {lines} lines (limit {limit})")
    assert not too_big, "split these modules along their jobs:\n" + "\n".join(too_big)


# Numeric bounds live in txn/limits.py; broker config defaults in txn/config.py's ConfigDefs.
_BOUND_LITERALS = re.compile(r"2\s*\*\*\s*(?:7|15|31|63)\b|\b(?:2147483647|9223372036854775807)\b")
_CONFIG_GET_WITH_DEFAULT = re.compile(r"""\.get\(\s*["']([a-z][a-z0-9.]*)["']\s*,\s*-?\d""")


def _broker_config_names() -> set[str]:
    text = (ROOT / "txn" / "config.py").read_text()
    return set(re.findall(r"""ConfigDef\(\s*["']([a-z][a-z0-9.]*)["']""", text))


@pytest.mark.parametrize("package", ["coordinator", "txn", "producer", "recovery"])
def test_constants_defined_once(package: str) -> None:
    names = _broker_config_names()
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel == "txn/limits.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if _BOUND_LITERALS.search(code):
                found.append(f"{rel}:{number}: numeric bound (use txn.limits): {line.strip()}")
            match = _CONFIG_GET_WITH_DEFAULT.search(code)
            if match and match.group(1) in names:
                found.append(f"{rel}:{number}: inline broker default (use default_of): {code}")
    assert not found, "\n".join(found)


def test_the_client_library_does_not_import_the_broker() -> None:
    """``producer`` (the client), its sink worker and ``recovery`` reach a broker only by wire."""
    graph = _graph()
    found = [
        f"{_source(name)}:{line} {name} imports {target}"
        for name, edges in sorted(graph.items())
        if name.split(".")[0] in ("producer", "recovery")
        for target, line in sorted(edges.items())
        if target.split(".")[0] == "coordinator"
    ]
    assert not found, "\n".join(found)


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _module_strings(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """(name, line) for every module loaded by name: ``importlib.import_module("m")``,
    ``__import__("m")``, and any string constant naming a module of the tree."""
    modules = _modules()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text in modules or any(text.startswith(m + ".") for m in modules if "." in m):
                yield text, node.lineno


def test_nothing_outside_the_command_line_imports_it() -> None:
    graph = _graph()
    found = [
        f"{_source(name)}:{line} {name} imports {target}"
        for name, edges in sorted(graph.items())
        if not _under(name, CLI)
        for target, line in sorted(edges.items())
        if _under(target, CLI)
    ]
    for name, path in sorted(_modules().items()):
        if _under(name, CLI):
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if (
                called in ("import_module", "__import__")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and _under(first.value, CLI)
            ):
                found.append(f"{_source(name)}:{node.lineno} {name} loads {first.value}")
    assert not found, "\n".join(found)


def test_the_broker_loads_no_client_recovery_or_harness_code() -> None:
    """``coordinator`` imports none of them, nor names one of their modules in a string (as
    ``importlib.import_module`` or a ``python -m`` command line would)."""
    graph = _graph()
    others = ("producer", "recovery", "chaos")
    found = [
        f"{_source(name)}:{line} {name} imports {target}"
        for name, edges in sorted(graph.items())
        if _under(name, "coordinator")
        for target, line in sorted(edges.items())
        if target.split(".")[0] in others
    ]
    for name, path in sorted(_modules().items()):
        if not _under(name, "coordinator"):
            continue
        tree = ast.parse(path.read_text(), str(path))
        found += [
            f"{_source(name)}:{line} {name} names {text!r}"
            for text, line in _module_strings(tree)
            if text.split(".")[0] in others
        ]
    assert not found, "\n".join(found)


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    """The module a ``from ... import`` names, relative imports resolved against ``name``."""
    if not node.level:
        return node.module or ""
    parts = name.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def test_no_private_name_is_imported_from_another_module() -> None:
    """``from <module of ours> import _name`` is a private name leaking across modules: make it
    public where it is shared, or move it to the module that uses it."""
    found = []
    for name, path in sorted(_modules().items()):
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _absolute(node, name, is_package)
            if target.split(".")[0] not in PACKAGES or target == name:
                continue
            found += [
                f"{_source(name)}:{node.lineno} imports {alias.name} from {target}"
                for alias in node.names
                if alias.name.startswith("_")
            ]
    assert not found, "private names imported across modules:\n" + "\n".join(found)
