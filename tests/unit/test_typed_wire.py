"""The wire's vocabulary is named, each name defined once (issue 26, first step).

* API keys are ``txn.api_keys.ApiKey`` members: no module writes an API key as a number.
* Kafka error codes are ``txn.errors.ErrorCode`` members: no module compares an error field
  with a number or answers one.
* ``TopicIdPartition`` is defined once, in ``txn/ids.py``.

Like tests/unit/test_layout.py these read the source (no imports of it) and name the line
that breaks a rule.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from txn.api_keys import KIP1289_APIS, ApiKey

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("txn", "coordinator", "producer", "recovery", "chaos")
API_KEYS_HOME = "txn/api_keys.py"
ERROR_CODES_HOME = "txn/errors.py"

#: Calls that take an API key and the positions it has there, beyond the functions of the
#: tree with a parameter named ``api_key`` (found by ``_key_parameters``).
_OTHER_KEY_ARGUMENTS: dict[str, frozenset[int]] = {
    "api": frozenset({0}),  # the handler decorator (coordinator.protocol.responses.api)
    "exchange": frozenset({0}),  # the SASL exchange callable of producer.protocol.security
    "load_request_schema": frozenset({0}),  # kio.index
    "load_response_schema": frozenset({0}),
}
#: Calls that take an error code first.
_CODE_CALLS = frozenset({"ErrorCode", "error_for_code", "raise_for_code", "FrameError"})
#: An error field or variable: error_code, partition_error_code, ack_error, error, err.
_ERROR_FIELD = re.compile(r"(^|_)(error|err)(_code)?$")
#: sharetxn's own key numbers, as grep would find them (not the KIP's name, KIP-1289).
_OWN_KEY_NUMBERS = re.compile(
    r"(?<![\w.-])(?:" + "|".join(str(int(k)) for k in sorted(KIP1289_APIS)) + r")(?![\w.])"
)


@functools.cache
def _parsed() -> tuple[tuple[str, ast.Module, str], ...]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            text = path.read_text()
            found.append((rel, ast.parse(text, rel), text))
    return tuple(found)


def _sources(exclude: str) -> Iterator[tuple[str, ast.Module, str]]:
    return (source for source in _parsed() if source[0] != exclude)


def _names(node: ast.AST) -> Iterator[str]:
    """The names and attribute names ``node`` mentions."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            yield inner.id
        elif isinstance(inner, ast.Attribute):
            yield inner.attr


def _int(node: ast.AST | None) -> int | None:
    """The value of an integer literal (also negative), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _ints(node: ast.AST) -> list[int]:
    """The integer literals of ``node`` itself or of a tuple, list or set literal."""
    elements = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [value for value in map(_int, elements) if value is not None]


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _target_names(node: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [t.id if isinstance(t, ast.Name) else ast.unparse(t) for t in targets]


def _module_constants(node: ast.stmt) -> Iterator[tuple[str, int]]:
    """(name, value) of ``NAME = 3``, ``NAME: Final = 3`` and ``A, B = 1, 2``."""
    pairs: list[tuple[ast.expr, ast.expr | None]] = []
    if isinstance(node, ast.AnnAssign):
        pairs.append((node.target, node.value))
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                pairs.extend(zip(target.elts, node.value.elts, strict=False))
            else:
                pairs.append((target, node.value))
    for target, value in pairs:
        number = _int(value)
        if isinstance(target, ast.Name) and number is not None:
            yield target.id, number


def _named_after_an_api(name: str) -> bool:
    """``API_PRODUCE``, ``SHARE_FETCH``, ``API_VERSIONS_KEY``: a second name of an API key."""
    bare = name.strip("_").upper().removesuffix("_KEY")
    return bare in ApiKey.__members__ or bare.removeprefix("API_") in ApiKey.__members__


@functools.cache
def _key_parameters() -> dict[str, frozenset[int]]:
    """Callee name -> positions of its ``api_key`` parameter, over every function of the tree
    (a method's ``self`` not counted; a class counts as its ``__init__``)."""
    found: dict[str, set[int]] = {k: set(v) for k, v in _OTHER_KEY_ARGUMENTS.items()}
    for _rel, tree, _text in _parsed():
        owners: list[ast.Module | ast.ClassDef] = [tree]
        owners += [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
        for owner in owners:
            for node in owner.body:
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
                if isinstance(owner, ast.ClassDef) and params[:1] in (["self"], ["cls"]):
                    params = params[1:]
                if "api_key" in params:
                    is_init = isinstance(owner, ast.ClassDef) and node.name == "__init__"
                    name = owner.name if isinstance(owner, ast.ClassDef) and is_init else node.name
                    found.setdefault(name, set()).add(params.index("api_key"))
    return {name: frozenset(positions) for name, positions in found.items()}


def _key_positions(call: ast.Call) -> tuple[str, frozenset[int], list[ast.expr]]:
    """(callee, API key positions, arguments); ``partial(f, ...)`` counts as ``f(...)``."""
    name, args = _callee(call), call.args
    if name == "partial" and args and isinstance(args[0], ast.Attribute | ast.Name):
        inner = ast.Call(func=args[0], args=args[1:], keywords=[])
        name, args = _callee(inner), args[1:]
    return name, _key_parameters().get(name, frozenset()), args


def _api_key_literals(tree: ast.Module) -> Iterator[tuple[int, str]]:
    # Module-level names only: an enum's members (e.g. AclOperation.DESCRIBE_CONFIGS) may
    # share an API's name.
    for statement in tree.body:
        for name, number in _module_constants(statement):
            if _named_after_an_api(name):
                yield statement.lineno, f"{name} = {number} (an API key by number)"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name, positions, args = _key_positions(node)
            for index, arg in enumerate(args):
                if index in positions and _int(arg) is not None:
                    yield node.lineno, f"{name}() with API key {_int(arg)}"
            for keyword in node.keywords:
                if keyword.arg == "api_key" and _int(keyword.value) is not None:
                    yield node.lineno, f"api_key={_int(keyword.value)}"
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any("api_key" in name for o in operands for name in _names(o)):
                for operand in operands:
                    for value in _ints(operand):
                        yield node.lineno, f"api key compared with {value}"
        elif isinstance(node, ast.Dict):
            numbered = [k for k in map(_int, node.keys) if k is not None]
            # A table keyed by API key numbers: supported versions, ACL rules, client maxima.
            if len(numbered) >= 3 and set(numbered) <= {int(k) for k in ApiKey}:
                yield node.lineno, f"a table keyed by numbers {numbered[:3]}... (API keys?)"


def _error_code_literals(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            names = [name for o in operands if not _ints(o) for name in _names(o)]
            if any(_ERROR_FIELD.search(name) for name in names):
                for operand in operands:
                    for value in _ints(operand):
                        yield node.lineno, f"error compared with {value}"
        elif isinstance(node, ast.Call):
            if _callee(node) in _CODE_CALLS and node.args and _int(node.args[0]) is not None:
                yield node.lineno, f"{_callee(node)}({_int(node.args[0])}, ...)"
            for keyword in node.keywords:
                if (
                    keyword.arg
                    and _ERROR_FIELD.search(keyword.arg)
                    and _int(keyword.value) is not None
                ):
                    yield node.lineno, f"{keyword.arg}={_int(keyword.value)}"
            if (
                _callee(node) == "get"
                and len(node.args) == 2
                and isinstance(node.args[0], ast.Constant)
                and _ERROR_FIELD.search(str(node.args[0].value))
                and _int(node.args[1]) is not None
            ):
                yield node.lineno, f".get({node.args[0].value!r}, {_int(node.args[1])})"
        elif isinstance(node, ast.Dict):
            for key, entry in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and isinstance(key.value, str)
                    and _ERROR_FIELD.search(key.value)
                    and _int(entry) is not None
                ):
                    yield key.lineno, f"{key.value!r}: {_int(entry)}"
        elif isinstance(node, ast.Assign | ast.AnnAssign) and _int(node.value) is not None:
            for name in _target_names(node):
                if _ERROR_FIELD.search(name.rpartition(".")[2]):
                    yield node.lineno, f"{name} = {_int(node.value)}"


#: Literals the rules above would misread, each with its reason.
_NOT_ERROR_CODES = {
    # the kio wire type "error_code" is two bytes wide (a size table, not an answer)
    ("txn/wire_guard.py", '"error_code": 2'),
}


def test_api_keys_are_named() -> None:
    found = [
        f"{rel}:{line}: {what} (use txn.api_keys.ApiKey)"
        for rel, tree, _text in _sources(exclude=API_KEYS_HOME)
        for line, what in _api_key_literals(tree)
    ]
    assert not found, "\n".join(found)


def test_sharetxn_api_key_numbers_have_one_home() -> None:
    """grep finds 1289, 1290 and 1291 (sharetxn's own keys) only in txn/api_keys.py."""
    found = [
        f"{rel}:{number}: {line.strip()}"
        for rel, _tree, text in _sources(exclude=API_KEYS_HOME)
        if rel != ERROR_CODES_HOME
        for number, line in enumerate(text.splitlines(), 1)
        if _OWN_KEY_NUMBERS.search(line)
    ]
    assert not found, "\n".join(found)


def test_error_codes_are_named() -> None:
    found = []
    for rel, tree, text in _sources(exclude=ERROR_CODES_HOME):
        lines = text.splitlines()
        for line, what in _error_code_literals(tree):
            if any(rel == f and snippet in lines[line - 1] for f, snippet in _NOT_ERROR_CODES):
                continue
            found.append(f"{rel}:{line}: {what} (use txn.errors.ErrorCode)")
    assert not found, "\n".join(found)


def test_topic_id_partition_is_defined_once() -> None:
    found = sorted(
        str(path.relative_to(ROOT))
        for top in (*PACKAGES, "tests", "bench")
        for path in (ROOT / top).rglob("*.py")
        if re.search(r"^\s*class TopicIdPartition\b", path.read_text(), re.MULTILINE)
    )
    assert found == ["txn/ids.py"], found


def test_api_keys_are_kafkas() -> None:
    """Kafka's keys have Kafka's numbers and names: those of the requests kio's schema index
    knows, and every request it knows below sharetxn's own keys is here."""
    for key in ApiKey:
        if key not in KIP1289_APIS:
            schema = _request_schema(key)
            assert schema is not None, f"{key.name}: Kafka has no request {int(key)}"
            assert schema.__api_key__ == key, key
            assert schema.__name__ == f"{key.api_name}Request", (key, schema)
    known = {n for n in range(min(KIP1289_APIS)) if _request_schema(n) is not None}
    assert known == {int(k) for k in ApiKey if k not in KIP1289_APIS}


def _request_schema(key: int) -> Any:
    """kio's request class of ``key`` at its lowest version, or None."""
    from kio.index import load_request_schema  # noqa: PLC0415

    for version in range(20):
        try:
            return load_request_schema(key, version)
        except Exception:  # that version does not exist
            continue
    return None


def test_the_kip1289_keys_are_sharetxns() -> None:
    assert {k.api_name for k in KIP1289_APIS} == {
        "TxnShareAcknowledge",
        "AddShareAcksToTxn",
        "DescribeSharePendingAcks",
    }


#: Handler families whose responses are still dicts; each leaves this list when it is typed.
_UNTYPED_FAMILIES = {}


def _handlers_returning_dicts(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Handlers (marked ``@api``, or taking a ``DecodedRequest``: the ACL rules and the
    security gate's own handlers too) annotated to return a dict."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.returns is None:
            continue
        marked = any(isinstance(d, ast.Call) and _callee(d) == "api" for d in node.decorator_list)
        takes_request = any(
            a.annotation is not None and "DecodedRequest" in ast.unparse(a.annotation)
            for a in (*node.args.posonlyargs, *node.args.args)
        )
        returns = {n.id for n in ast.walk(node.returns) if isinstance(n, ast.Name)}
        if (marked or takes_request) and returns & {"dict", "Dict", "Mapping"}:
            yield node


def test_handlers_answer_typed_messages() -> None:
    """No handler is annotated to return a dict: each answers a typed message
    (``coordinator/protocol/*_messages.py``) that ``wire.encode_response`` renders."""
    found = [
        f"{rel}:{node.lineno}: {node.name} returns a dict"
        for rel, tree, _text in _parsed()
        if rel.startswith("coordinator/protocol/") and rel not in _UNTYPED_FAMILIES
        for node in _handlers_returning_dicts(tree)
    ]
    assert not found, "\n".join(found)


def test_untyped_families_are_untyped() -> None:
    """The list above only shrinks: each family in it still has a handler returning a dict."""
    by_path = {rel: tree for rel, tree, _text in _parsed()}
    for rel in _UNTYPED_FAMILIES:
        assert any(_handlers_returning_dicts(by_path[rel])), f"{rel} is typed: unlist it"
