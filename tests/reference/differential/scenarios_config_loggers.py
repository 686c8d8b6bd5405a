"""BROKER_LOGGER resources (``kafka-configs.sh --entity-type broker-loggers``): DescribeConfigs
of the broker's loggers and IncrementalAlterConfigs of their levels, in Kafka's words.

Logger names differ (Kafka's log4j loggers, sharetxn's Python ones): a scenario picks the first
non-root logger each broker lists and shows it as ``<logger>``; ``root`` is common.  The
broker's id is 1 on both sides.  Levels set here are restored.
"""

from __future__ import annotations

from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.scenarios_config_describe import describe
from tests.reference.differential.wire import plain

AREA = "configs"
BROKER_LOGGER = 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _alter(
    ctx: Ctx,
    name: str,
    ops: list[tuple[str, int, str | None]],
    *,
    validate_only: bool = True,
) -> Any:
    configs = [{"name": n, "config_operation": o, "value": v} for n, o, v in ops]
    resp = ctx.call(
        44,
        {
            "resources": [
                {"resource_type": BROKER_LOGGER, "resource_name": name, "configs": configs}
            ],
            "validate_only": validate_only,
        },
    )
    r = resp.responses[0]
    return {"error": plain(r.error_code, "error_code"), "message": r.error_message}


def _masked(value: Any, logger: str) -> Any:
    if isinstance(value, str):
        return value.replace(logger, "<logger>")
    if isinstance(value, dict):
        return {_masked(k, logger): _masked(v, logger) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v, logger) for v in value]
    return value


def _a_logger(ctx: Ctx) -> str:
    listed = describe(ctx, BROKER_LOGGER, "1")["configs"]
    return next(name for name in sorted(listed) if name != "root")


@scenario(AREA)
def broker_logger_describe(ctx: Ctx) -> Any:
    logger = _a_logger(ctx)
    out = {
        "named": describe(ctx, BROKER_LOGGER, "1", ["root", logger, "no.such.Logger"]),
        "without documentation": describe(
            ctx, BROKER_LOGGER, "1", ["root"], synonyms=False, documentation=False
        ),
        "other broker": describe(ctx, BROKER_LOGGER, "2"),
        "empty name": describe(ctx, BROKER_LOGGER, ""),
        "not a number": describe(ctx, BROKER_LOGGER, "abc"),
        "spaced": describe(ctx, BROKER_LOGGER, " 1"),
    }
    return _masked(out, logger)


@scenario(AREA)
def broker_logger_alter_checks(ctx: Ctx) -> Any:
    logger = _a_logger(ctx)
    cases: dict[str, tuple[str, list[tuple[str, int, str | None]]]] = {
        "set": ("1", [(logger, SET, "DEBUG")]),
        "lower case": ("1", [(logger, SET, "debug")]),
        "unknown level": ("1", [(logger, SET, "LOUD")]),
        "OFF": ("1", [(logger, SET, "OFF")]),
        "FATAL": ("1", [(logger, SET, "FATAL")]),
        "null": ("1", [(logger, SET, None)]),
        "unknown logger": ("1", [("no.such.Logger", SET, "DEBUG")]),
        "delete unknown": ("1", [("no.such.Logger", DELETE, None)]),
        "delete": ("1", [(logger, DELETE, None)]),
        "delete root": ("1", [("root", DELETE, None)]),
        "append": ("1", [(logger, APPEND, "DEBUG")]),
        "subtract": ("1", [(logger, SUBTRACT, "DEBUG")]),
        "other broker": ("2", [(logger, SET, "DEBUG")]),
        "empty name": ("", [(logger, SET, "DEBUG")]),
        "second bad": ("1", [(logger, SET, "TRACE"), ("root", SET, "bad")]),
    }
    out = {label: _alter(ctx, name, ops) for label, (name, ops) in cases.items()}
    legacy = ctx.call(
        33,
        {
            "resources": [
                {
                    "resource_type": BROKER_LOGGER,
                    "resource_name": "1",
                    "configs": [{"name": logger, "value": "DEBUG"}],
                }
            ],
            "validate_only": True,
        },
        2,
    ).responses[0]
    out["legacy AlterConfigs"] = {
        "error": plain(legacy.error_code, "error_code"),
        "message": legacy.error_message,
    }
    return _masked(out, logger)


@scenario(AREA)
def broker_logger_levels_change(ctx: Ctx) -> Any:
    """A level set on a logger shows at once; root's level reaches the loggers that follow
    it; a deleted level follows root again."""
    logger = _a_logger(ctx)
    keys = ["root", logger]

    def levels() -> Any:
        return {
            k: v["value"] for k, v in describe(ctx, BROKER_LOGGER, "1", keys)["configs"].items()
        }

    before = levels()
    out: dict[str, Any] = {"before": before}
    out["set"] = _alter(ctx, "1", [(logger, SET, "TRACE")], validate_only=False)
    out["after set"] = levels()
    out["root"] = _alter(ctx, "1", [("root", SET, "ERROR")], validate_only=False)
    out["after root"] = levels()
    out["delete"] = _alter(ctx, "1", [(logger, DELETE, None)], validate_only=False)
    out["after delete"] = levels()
    _alter(ctx, "1", [("root", SET, before["root"])], validate_only=False)
    out["restored"] = levels()
    return _masked(out, logger)
