"""The HTML report of ``sharetxn chaos run/replay --report DIR``."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from chaos.cli.main import main

pytestmark = pytest.mark.chaos

OPS = "300"


def _svg(page: str) -> ET.Element:
    found = re.search(r"<svg .*?</svg>", page, re.S)
    assert found is not None, "no inline SVG timeline"
    return ET.fromstring(found.group(0))  # well-formed: a browser shows it


def test_replay_of_a_clean_seed_writes_a_self_contained_report(tmp_path: Path) -> None:
    assert main(["chaos", "replay", "2", "--ops", OPS, "--report", str(tmp_path)]) == 0
    page = (tmp_path / "index.html").read_text()
    assert f"<code>sharetxn chaos replay 2 --ops {OPS}</code>" in page
    assert "No invariant violated" in page
    svg = _svg(page)
    labels = {t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")}
    assert {"feeder", "broker", "simulated time (s)"} <= labels
    assert any(label and label.startswith("w0.") for label in labels)
    assert "net.drop" in page and "markers.stale" in page  # the seed's fault rates
    assert "<script" not in page and "src=" not in page and 'href="http' not in page


def test_replay_of_a_mutated_seed_shows_the_anomaly_and_how_to_replay_it(
    tmp_path: Path,
) -> None:
    argv = ["chaos", "replay", "1", "--ops", OPS, "--mutation", "lso-ignores-open-txns"]
    assert main([*argv, "--report", str(tmp_path)]) == 1
    page = (tmp_path / "index.html").read_text()
    assert f"sharetxn chaos replay 1 --ops {OPS} --mutation lso-ignores-open-txns" in page
    assert "I3 aborted read (G1a): a read_committed consumer read" in page
    svg = _svg(page)
    marks = list(svg.iter("{http://www.w3.org/2000/svg}circle"))
    assert marks, "the violation's entries are marked on the timeline"


def test_run_report_lists_every_seed_and_details_the_failing_ones(tmp_path: Path) -> None:
    argv = ["chaos", "run", "--seeds", "3", "--ops", OPS, "--mutation", "lso-ignores-open-txns"]
    assert main([*argv, "--report", str(tmp_path)]) == 1
    page = (tmp_path / "index.html").read_text()
    for seed in (1, 2, 3):
        assert f"<td>{seed}</td>" in page
    assert f"sharetxn chaos run --seeds 3 --ops {OPS} --first-seed 1" in page
    assert 'id="seed-1"' in page  # seed 1 fails: shown in detail with its timeline
    assert "replay 1 --ops 300 --mutation lso-ignores-open-txns" in page
    _svg(page)


def test_run_report_of_a_clean_batch_shows_its_first_seed(tmp_path: Path) -> None:
    assert main(["chaos", "run", "--seeds", "2", "--ops", OPS, "--report", str(tmp_path)]) == 0
    page = (tmp_path / "index.html").read_text()
    assert "No invariant violated in 2 seed(s) (exit code 0)" in page
    assert 'id="seed-1"' in page and 'id="seed-2"' not in page
    _svg(page)
