"""Requests are typed (issue 26): each handler reads its body through a version-free view.

* Every served API has a view (``<Api>RequestView`` in ``coordinator/protocol/*request_views``)
  and every field a view names -- nested views too -- is in every supported version's schema,
  with the type the view declares (kio's nominal ints and strings as ``int`` and ``str``);
  ``<Api>RequestV<low>To<high>View`` likewise for the versions it names.
* Every ``@api`` handler declares ``req: DecodedRequest[<Api>RequestView]``.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import re
import types
import typing
import uuid
from pathlib import Path
from typing import Any

import pytest

from coordinator.protocol import (
    admin_request_views,
    group_request_views,
    request_views,
    share_request_views,
)
from coordinator.protocol.api_versions import SUPPORTED
from coordinator.protocol.wire import B, DecodedRequest
from txn.api_keys import ApiKey
from txn.kip1289_schema import load_request

_VERSIONS = {ApiKey(key): (low, high) for key, (_name, low, high) in SUPPORTED.items()}
_RANGED = r"(\w+)RequestV(\d+)To(\d+)View"
ROOT = Path(__file__).resolve().parents[2]
_MODULES = (request_views, group_request_views, share_request_views, admin_request_views)
_VIEWS: dict[str, type] = {
    name: value
    for module in _MODULES
    for name, value in vars(module).items()
    if name.endswith("View") and isinstance(value, type)
}
_SCALARS = (
    (bool, "bool"),
    (int, "int"),
    (float, "float"),
    (str, "str"),
    (bytes, "bytes"),
    (datetime.timedelta, "datetime.timedelta"),
    (uuid.UUID, "uuid.UUID"),
)


def _view_name(key: ApiKey) -> str:
    return "".join(part.capitalize() for part in key.name.split("_")) + "RequestView"


def _shape(tp: Any) -> str:
    """A type as a comparable string, nested entities and views as ``{}``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(sorted(_shape(arg) for arg in typing.get_args(tp)))
    if origin is tuple:
        return f"tuple[{_shape(typing.get_args(tp)[0])}]"
    if tp is type(None):
        return "None"
    if dataclasses.is_dataclass(tp) or tp.__name__ in _VIEWS:
        return "{}"
    for base, name in _SCALARS:
        if isinstance(tp, type) and issubclass(tp, base):
            return name
    raise TypeError(tp)


def _nested(tp: Any) -> Any:
    """The entity or view inside ``tuple[X, ...]``, ``X | None`` or ``X``, else None."""
    for inner in (tp, *typing.get_args(tp)):
        for candidate in (inner, *typing.get_args(inner)):
            if dataclasses.is_dataclass(candidate) or (
                isinstance(candidate, type) and candidate.__name__ in _VIEWS
            ):
                return candidate
    return None


def _check(view: type, entity: type, where: str) -> None:
    wanted = typing.get_type_hints(view, vars(__import__(view.__module__, fromlist=["_"])))
    have = typing.get_type_hints(entity)
    for name, tp in wanted.items():
        assert name in have, f"{where}: {entity.__name__} has no field {name!r}"
        assert _shape(have[name]) in _shape(tp).split(" | ") or _shape(have[name]) == _shape(tp), (
            f"{where}.{name}: view says {_shape(tp)}, schema has {_shape(have[name])}"
        )
        inner_view = _nested(tp)
        if inner_view is not None:
            _check(inner_view, _nested(have[name]), f"{where}.{name}")


@pytest.mark.parametrize("key", sorted(_VERSIONS), ids=lambda k: ApiKey(k).name)
def test_each_view_names_fields_every_supported_version_has(key: ApiKey) -> None:
    view = _VIEWS.get(_view_name(key))
    assert view is not None, f"no {_view_name(key)} in coordinator/protocol/*request_views.py"
    low, high = _VERSIONS[key]
    for version in range(low, high + 1):
        _check(view, load_request(int(key), version), f"{key.name} v{version}")


@pytest.mark.parametrize(
    "name", sorted(name for name in _VIEWS if re.fullmatch(_RANGED, name)), ids=str
)
def test_each_view_of_some_versions_names_fields_those_versions_have(name: str) -> None:
    match = re.fullmatch(_RANGED, name)
    assert match is not None
    key = next(k for k in _VERSIONS if _view_name(k) == match[1] + "RequestView")
    low, high = int(match[2]), int(match[3])
    assert _VERSIONS[key][0] <= low <= high <= _VERSIONS[key][1], name
    for version in range(low, high + 1):
        _check(_VIEWS[name], load_request(int(key), version), f"{name} v{version}")


def _handlers() -> typing.Iterator[tuple[str, ast.AsyncFunctionDef | ast.FunctionDef, str]]:
    for path in sorted((ROOT / "coordinator").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and isinstance(decorator.func, ast.Name)
                    and decorator.func.id == "api"
                    and isinstance(decorator.args[0], ast.Attribute)
                ):
                    yield str(path.relative_to(ROOT)), node, decorator.args[0].attr


def test_every_handler_declares_the_view_of_its_api() -> None:
    wrong = []
    seen = 0
    for path, node, key_name in _handlers():
        seen += 1
        req = node.args.args[-1]
        wanted = f"DecodedRequest[{_view_name(ApiKey[key_name])}]"
        annotation = "" if req.annotation is None else ast.unparse(req.annotation)
        if annotation != wanted:
            wrong.append(f"{path}:{node.lineno} {node.name}: {annotation} (want {wanted})")
    assert seen == len(_VERSIONS) - 2, seen  # SaslHandshake/Authenticate: the security gate's
    assert not wrong, "\n".join(wrong)


def test_a_decoded_request_body_is_typed_by_its_view() -> None:
    """``DecodedRequest`` is generic in its body: no ``Any`` in the class itself."""
    hints = typing.get_type_hints(DecodedRequest)
    assert hints["body"] is B
    assert typing.Any not in hints.values()
