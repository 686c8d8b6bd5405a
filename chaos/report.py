"""The HTML report of a simulation batch or replay: one self-contained ``index.html``.

``sharetxn chaos run ... --report DIR`` and ``sharetxn chaos replay SEED ... --report DIR``
write ``DIR/index.html``: the batch's totals, a table with every seed's outcome and its replay
command, and, for each seed shown in detail (the failing ones, or the first seed of a clean
batch), the command that replays it, the fault rates its seed drew, a timeline of its
operations and faults per process over simulated time (an inline SVG: no scripts, no files
beside it, no plotting library) and the anomalies with the history entries involved.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chaos.checker import Violation
from chaos.history import BROKER, FINAL, NEMESIS, READER, Entry, pairs

if TYPE_CHECKING:
    from chaos.runner import RunResult, SeedSummary

MAX_DETAILED = 10

# Timeline geometry (pixels).
WIDTH = 1100
LABEL = 110
ROW = 14
TOP = 26
BOTTOM = 34

RESULT_COLOURS = {"ok": "#3a9a4a", "fail": "#c0392b", "info": "#e69b23"}
FAULT_COLOUR = "#7b3fb5"
CRASH_COLOUR = "#111111"
VIOLATION_COLOUR = "#e0115f"
# Nemesis events that last a while: (name, field with the duration in ms).
DURATIONS = {"pause": "ms", "partition": "ms", "clock-jump": "ms"}


@dataclass(frozen=True, slots=True)
class SeedDetail:
    """What the report shows of one seed in detail."""

    seed: int
    command: str
    entries: Sequence[Entry]
    violations: Sequence[Violation]
    profile: dict[str, Any]
    stats: dict[str, Any]


def write_report(
    directory: Path,
    *,
    title: str,
    invocation: str,
    rows: Sequence[SeedSummary],
    details: Sequence[SeedDetail],
) -> Path:
    """Write ``directory/index.html`` and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "index.html"
    path.write_text(render(title=title, invocation=invocation, rows=rows, details=details))
    return path


def render(
    *, title: str, invocation: str, rows: Sequence[SeedSummary], details: Sequence[SeedDetail]
) -> str:
    failing = [r for r in rows if not r.ok]
    ops = sum(r.invoked for r in rows)
    wall = sum(r.wall_s for r in rows)
    virtual_s = sum(r.virtual_ms for r in rows) / 1000
    verdict = (
        f'<p class="bad">{len(failing)} of {len(rows)} seed(s) violated invariants'
        " (exit code 1).</p>"
        if failing
        else f'<p class="good">No invariant violated in {len(rows)} seed(s) (exit code 0).</p>'
    )
    rate = f"{ops / wall:,.0f}" if wall > 0 else "-"
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p>Command: <code>{_e(invocation)}</code></p>",
        verdict,
        f"<p>{len(rows)} seed(s), {ops:,} operations, {virtual_s:,.0f} s simulated,"
        f" {wall:.1f} s of computing ({rate} operations per second per core).</p>",
        _HOW_TO_READ,
        "<h2>Seeds</h2>",
        _seed_table(rows),
    ]
    for detail in details:
        parts.append(_detail(detail))
    if len(failing) > len(details):
        parts.append(
            f"<p>{len(failing) - len(details)} more failing seed(s) not shown in detail:"
            " replay them with <code>--report</code>.</p>"
        )
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _seed_table(rows: Sequence[SeedSummary]) -> str:
    out = [
        "<table><tr><th>seed</th><th>outcome</th><th>operations</th><th>history entries</th>"
        "<th>simulated s</th><th>wall s</th><th>broker crashes</th><th>client crashes</th>"
        "<th>drain</th><th>replay</th></tr>"
    ]
    for r in rows:
        outcome = (
            '<span class="good">ok</span>'
            if r.ok
            else f'<a class="bad" href="#seed-{r.seed}">{_e(", ".join(r.invariants))}</a>'
        )
        out.append(
            f"<tr><td>{r.seed}</td><td>{outcome}</td><td>{r.invoked:,}</td><td>{r.entries:,}</td>"
            f"<td>{r.virtual_ms / 1000:,.1f}</td><td>{r.wall_s:.2f}</td>"
            f"<td>{r.broker_crashes}</td><td>{r.client_crashes}</td>"
            f"<td>{'quiescent' if r.quiescent else 'NOT quiescent'}</td>"
            f"<td><code>{_e(r.command)}</code></td></tr>"
        )
    out.append("</table>")
    return "\n".join(out)


def _detail(d: SeedDetail) -> str:
    verdict = (
        f'<p class="bad">{len(d.violations)} violation(s)</p>'
        if d.violations
        else '<p class="good">No invariant violated.</p>'
    )
    stats = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in d.stats.items())
    parts = [
        f'<h2 id="seed-{d.seed}">Seed {d.seed}</h2>',
        f"<p>Replay: <code>{_e(d.command)}</code></p>",
        verdict,
        f"<p>{_e(stats)}</p>",
        "<h3>Timeline</h3>",
        timeline_svg(d.entries, d.violations),
        "<h3>Anomalies</h3>",
    ]
    if d.violations:
        parts.append("<ol>")
        for v in d.violations:
            parts.append(f"<li><pre>{_e(v.describe(d.entries))}</pre></li>")
        parts.append("</ol>")
    else:
        parts.append("<p>None.</p>")
    parts.append("<h3>Fault rates drawn for this seed</h3>")
    parts.append(_profile_table(d.profile))
    return "\n".join(parts)


def _flatten(prefix: str, value: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _flatten(f"{prefix}.{key}" if prefix else str(key), inner)
    else:
        yield prefix, value


def _profile_table(profile: dict[str, Any]) -> str:
    out = ["<table><tr><th>setting</th><th>value</th></tr>"]
    for key, value in _flatten("", profile):
        shown = f"{value:.4f}" if isinstance(value, float) else json.dumps(value)
        off = ' class="off"' if value in (0, 0.0) and isinstance(value, float) else ""
        out.append(f"<tr{off}><td>{_e(key)}</td><td>{_e(shown)}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


# -- the timeline -----------------------------------------------------------------------------


def _row_key(process: str) -> tuple[int, str, int]:
    """Workers first (by slot and incarnation), then the feeder, the broker, the rest."""
    if process.startswith("w") and "." in process:
        slot, _, inc = process.partition(".")
        if inc.isdigit():
            return (0, slot, int(inc))
    order = {"feeder": 1, BROKER: 2, NEMESIS: 3, READER: 4, FINAL: 5}
    return (order.get(process, 6), process, 0)


class _Spans:
    """Horizontal spans per (row, colour), merged when they touch at the drawing's scale."""

    def __init__(self, scale: float) -> None:
        self._scale = scale
        self.spans: dict[tuple[str, str], list[list[float]]] = defaultdict(list)

    def add(self, row: str, colour: str, start_ms: int, end_ms: int) -> None:
        x0 = start_ms * self._scale
        x1 = max(end_ms * self._scale, x0 + 1.0)
        spans = self.spans[(row, colour)]
        if spans and x0 <= spans[-1][1] + 0.5:
            spans[-1][1] = max(spans[-1][1], x1)
        else:
            spans.append([x0, x1])


def timeline_svg(entries: Sequence[Entry], violations: Sequence[Violation]) -> str:
    """Operations (bars: ok, fail, info) and faults (marks) per process over simulated time."""
    end_ms = max((e.time for e in entries), default=0) or 1
    plot = WIDTH - LABEL - 10
    scale = plot / end_ms
    rows = sorted({e.process for e in entries}, key=_row_key)
    y_of = {p: TOP + i * ROW for i, p in enumerate(rows)}
    height = TOP + len(rows) * ROW + BOTTOM
    spans = _Spans(scale)
    for invoke, done in sorted(pairs(entries), key=lambda p: p[0].time):
        if done is None:
            continue
        spans.add(invoke.process, RESULT_COLOURS.get(done.type, "#888"), invoke.time, done.time)
    marks: list[str] = []
    by_name = {e.process for e in entries}
    for e in entries:
        if e.type != "event":
            continue
        if e.process == NEMESIS and e.f in DURATIONS:
            target = str(e.value.get("process") or e.value.get("client") or NEMESIS)
            row = target if target in by_name else NEMESIS
            spans.add(row, FAULT_COLOUR, e.time, e.time + int(e.value.get(DURATIONS[e.f], 0)))
        elif e.process == NEMESIS and e.f in ("client-crash", "broker-crash", "io-error", "exit"):
            target = str(e.value.get("process") or NEMESIS)
            row = target if target in by_name else NEMESIS
            colour = FAULT_COLOUR if e.f == "io-error" else CRASH_COLOUR
            marks.append(_tick(LABEL + e.time * scale, y_of[row], colour, f"{e.f} t={e.time}"))
        elif e.process == BROKER and e.f in ("broker-crash", "broker-start"):
            colour = CRASH_COLOUR if e.f == "broker-crash" else "#2b6cb0"
            marks.append(_tick(LABEL + e.time * scale, y_of[BROKER], colour, f"{e.f} t={e.time}"))
    for v in violations:
        for index in v.entries:
            if 0 <= index < len(entries):
                e = entries[index]
                cx = LABEL + e.time * scale
                cy = y_of[e.process] + ROW / 2
                marks.append(
                    f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="none"'
                    f' stroke="{VIOLATION_COLOUR}" stroke-width="2">'
                    f"<title>{_e(v.invariant)} #{index} {_e(e.f)} t={e.time}</title></circle>"
                )
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}"'
        f' viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="10">',
        f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/>',
    ]
    for i, process in enumerate(rows):
        y = y_of[process]
        if i % 2:
            out.append(f'<rect x="{LABEL}" y="{y}" width="{plot}" height="{ROW}" fill="#f3f3f3"/>')
        out.append(
            f'<text x="{LABEL - 6}" y="{y + ROW - 3}" text-anchor="end">{_e(process)}</text>'
        )
    # fail and info bars over the ok ones, faults over everything
    order = {c: i for i, c in enumerate((*RESULT_COLOURS.values(), FAULT_COLOUR))}
    for (row, colour), segments in sorted(spans.spans.items(), key=lambda k: order.get(k[0][1], 9)):
        y = y_of[row] + 2
        for x0, x1 in segments:
            out.append(
                f'<rect x="{LABEL + x0:.1f}" y="{y}" width="{x1 - x0:.1f}" height="{ROW - 4}"'
                f' fill="{colour}" fill-opacity="0.8"/>'
            )
    out.extend(marks)
    axis_y = TOP + len(rows) * ROW
    out.append(
        f'<line x1="{LABEL}" y1="{axis_y}" x2="{LABEL + plot}" y2="{axis_y}" stroke="#333"/>'
    )
    step = _tick_step(end_ms / 1000)
    t = 0.0
    while t * 1000 <= end_ms:
        x = LABEL + t * 1000 * scale
        out.append(
            f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 4}" stroke="#333"/>'
        )
        out.append(f'<text x="{x:.1f}" y="{axis_y + 15}" text-anchor="middle">{t:g}</text>')
        t += step
    out.append(
        f'<text x="{LABEL + plot / 2}" y="{axis_y + 29}" text-anchor="middle">'
        "simulated time (s)</text>"
    )
    out.append(_legend())
    out.append("</svg>")
    return "\n".join(out)


def _line(x1: float, y1: float, x2: float, y2: float) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1}" x2="{x2:.1f}" y2="{y2}" stroke="#333"/>'


def _tick(x: float, y: int, colour: str, title: str) -> str:
    return (
        f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + ROW}" stroke="{colour}"'
        f' stroke-width="2"><title>{_e(title)}</title></line>'
    )


def _tick_step(seconds: float) -> float:
    for step in (1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600):
        if seconds / step <= 12:
            return float(step)
    return 7200.0


def _legend() -> str:
    items = [
        ("ok", RESULT_COLOURS["ok"]),
        ("fail", RESULT_COLOURS["fail"]),
        ("info (indeterminate)", RESULT_COLOURS["info"]),
        ("pause / partition / clock jump", FAULT_COLOUR),
        ("crash", CRASH_COLOUR),
        ("violation", VIOLATION_COLOUR),
    ]
    out = []
    x = LABEL
    for label, colour in items:
        out.append(f'<rect x="{x}" y="8" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{x + 14}" y="17">{_e(label)}</text>')
        x += 20 + 7 * len(label)
    return "\n".join(out)


_CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
code, pre { font-family: monospace; font-size: 12px; }
pre { white-space: pre-wrap; background: #f7f7f7; padding: 0.5em; }
table { border-collapse: collapse; font-size: 12px; margin-bottom: 1em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
tr.off td { color: #999; }
.good { color: #2d7a3a; font-weight: bold; }
.bad { color: #b0222f; font-weight: bold; }
svg { border: 1px solid #ddd; }
"""

_HOW_TO_READ = """
<details><summary>How to read this report</summary>
<p>Each seed is one deterministic simulation: the same seed (at the same commit) gives the same
history byte for byte, so the replay command reproduces it exactly (add
<code>--history FILE</code> to get every entry).  In the timeline every row is a process
(<code>w&lt;slot&gt;.&lt;incarnation&gt;</code> workers, the feeder, the broker's observations, the
nemesis, the concurrent read_committed reader); bars are client operations from invocation to
completion -- green ok, red fail, orange info (indeterminate: no answer) -- and purple bars the
pauses, partitions and clock jumps the nemesis injected; black ticks are crashes (blue: a broker
restart).  Red circles mark the history entries a violation names; hover over a mark for its
entry.  Under <em>Anomalies</em> each violation gives its invariant (see docs/chaos.md), what
broke, and the entries involved as <code>#index t=virtual-ms process type operation value</code>.
The fault rates are the seed's swarm draw: a rate of 0 means that fault was off.</p>
</details>
"""


def detail_of(result: RunResult, command: str) -> SeedDetail:
    s = result.stats
    return SeedDetail(
        seed=result.seed,
        command=command,
        entries=result.history.entries,
        violations=result.violations,
        profile=result.profile.to_json(),
        stats={
            "operations": s.ops,
            "history_entries": len(result.history.entries),
            "simulated_s": round(s.virtual_ms / 1000, 1),
            "broker_crashes": s.broker_crashes,
            "client_crashes": s.client_crashes,
            "pauses": s.pauses,
            "zombies": s.zombies,
            "torn_tails": s.torn_tails,
            "drain": "quiescent" if s.quiescent else "NOT quiescent",
        },
    )
