"""Scenarios, the runner that runs each against both brokers, and the table."""

from __future__ import annotations

import json
import traceback
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tests.reference.differential.ctx import Ctx, warm_up

ScenarioFn = Callable[[Ctx], Any]


@dataclass(frozen=True)
class Scenario:
    name: str
    area: str
    fn: ScenarioFn
    #: It changes broker-wide state (cluster-default or broker configs) that other scenarios
    #: would see: run alone, after the others.
    exclusive: bool = False


REGISTRY: dict[str, Scenario] = {}


def scenario(area: str, *, exclusive: bool = False) -> Callable[[ScenarioFn], ScenarioFn]:
    """Register ``fn`` as the scenario ``area/fn-name`` (``exclusive``: run alone)."""

    def register(fn: ScenarioFn) -> ScenarioFn:
        name = f"{area}/{fn.__name__}"
        if name in REGISTRY:
            msg = f"two scenarios named {name}"
            raise ValueError(msg)
        REGISTRY[name] = Scenario(name, area, fn, exclusive)
        return fn

    return register


@dataclass
class Outcome:
    name: str
    area: str
    kafka: Any
    sharetxn: Any
    status: str  # identical | documented | pending | open
    reason: str = ""
    diffs: list[str] = field(default_factory=list)


def _blank(value: Any, token: str) -> Any:
    if isinstance(value, str):
        return value.replace(token, "")
    if isinstance(value, list | tuple):
        return [_blank(v, token) for v in value]
    if isinstance(value, dict):
        return {_blank(k, token): _blank(v, token) for k, v in value.items()}
    return value


def run_one(sc: Scenario, bootstrap: str, token: str, target: str) -> Any:
    """The observation of one scenario on one broker (an exception is an observation too)."""
    ctx = Ctx(bootstrap, token, target)
    try:
        obs = sc.fn(ctx)
    except Exception as exc:  # the observation is "it raised", compared like any other
        obs = {"raised": type(exc).__name__, "where": traceback.format_exc(limit=-1)[-300:]}
    finally:
        ctx.close()
    # JSON round trip: tuples become lists, keys strings
    return json.loads(json.dumps(_blank(obs, token), default=str))


def diff_paths(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two observations differ, as ``path: kafka != sharetxn`` lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b), key=str):
            out += diff_paths(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += diff_paths(x, y, f"{path}[{i}]")
        return out
    if a == b:
        return []
    return [f"{path or '.'}: kafka={json.dumps(a)[:300]} sharetxn={json.dumps(b)[:300]}"]


def run_all(
    kafka: str,
    sharetxn: str,
    known: dict[str, str],
    *,
    pending: dict[str, str] | None = None,
    names: Iterable[str] | None = None,
    workers: int = 4,
) -> list[Outcome]:
    """Every scenario against both brokers (in parallel), compared.

    ``known`` differences are documented ones (kept on purpose); ``pending`` ones are open
    differences whose fix is planned elsewhere (the reason says where): reported, not failed.
    """
    pending = pending or {}
    token = uuid.uuid4().hex[:8]
    warm_up(kafka)
    warm_up(sharetxn)
    chosen = [REGISTRY[n] for n in (names if names is not None else sorted(REGISTRY))]
    observed: list[tuple[Scenario, Any, Any]] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [
            (
                sc,
                pool.submit(run_one, sc, kafka, f"{token}{i:03d}", "kafka"),
                pool.submit(run_one, sc, sharetxn, f"{token}{i:03d}", "sharetxn"),
            )
            for i, sc in enumerate(chosen)
            if not sc.exclusive
        ]
        observed += [(sc, fk.result(), fs.result()) for sc, fk, fs in futures]
    # Broker-wide changes, one scenario at a time once nothing else runs (both brokers at once).
    with ThreadPoolExecutor(max_workers=2) as pool:
        for i, sc in enumerate(chosen):
            if sc.exclusive:
                fk = pool.submit(run_one, sc, kafka, f"{token}{i:03d}", "kafka")
                fs = pool.submit(run_one, sc, sharetxn, f"{token}{i:03d}", "sharetxn")
                observed.append((sc, fk.result(), fs.result()))
    order = {sc.name: i for i, sc in enumerate(chosen)}
    observed.sort(key=lambda o: order[o[0].name])
    outcomes = []
    for sc, k_seen, s_seen in observed:
        k = k_seen if isinstance(k_seen, dict) else {"observed": k_seen}
        s = s_seen if isinstance(s_seen, dict) else {"observed": s_seen}
        diffs = diff_paths(k, s)
        if "raised" in k or "raised" in s:
            status, reason = "open", "the scenario raised"
            diffs = diffs or [f"raised: {k.get('raised')} / {s.get('raised')}"]
        elif not diffs:
            status, reason = "identical", ""
        elif sc.name in known:
            status, reason = "documented", known[sc.name]
        elif sc.name in pending:
            status, reason = "pending", pending[sc.name]
        else:
            status, reason = "open", ""
        outcomes.append(Outcome(sc.name, sc.area, k, s, status, reason, diffs))
    return outcomes


def table(outcomes: Sequence[Outcome]) -> str:
    """Scenarios, identical, different-and-documented, different-and-pending (a fix planned),
    different-and-open, by area."""
    areas = sorted({o.area for o in outcomes})
    rows = [("area", "scenarios", "identical", "documented", "pending", "open")]
    for area in [*areas, "total"]:
        sel = [o for o in outcomes if area in ("total", o.area)]
        rows.append(
            (
                area,
                str(len(sel)),
                str(sum(o.status == "identical" for o in sel)),
                str(sum(o.status == "documented" for o in sel)),
                str(sum(o.status == "pending" for o in sel)),
                str(sum(o.status == "open" for o in sel)),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.insert(len(lines) - 1, "  ".join("-" * w for w in widths))
    for o in outcomes:
        if o.status != "identical":
            lines.append(f"{o.status.upper():10} {o.name}: {o.reason or 'not documented'}")
            if o.status in ("open", "pending"):
                lines += [f"    {d}" for d in o.diffs[:8]]
    return "\n".join(lines)
