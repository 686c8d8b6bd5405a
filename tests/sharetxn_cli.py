"""Running the ``sharetxn`` command line (``python -m chaos.cli``) in a child process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def run_cli(
    *args: str, timeout: float, check: bool = False, **options: Any
) -> subprocess.CompletedProcess[str]:
    """``sharetxn ARGS``, its output captured as text (``options``: more for ``subprocess.run``)."""
    return subprocess.run(
        [sys.executable, "-m", "chaos.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
        **options,
    )


def broker_once(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``sharetxn broker`` on ``data_dir`` and a free port, for a run that ends by itself."""
    listen = ("--data-dir", str(data_dir), "--listen", "127.0.0.1:0")
    return run_cli("broker", *listen, *args, timeout=30)


def recover_dry_run(
    bootstrap: str,
    checkpoint: str | Path,
    *more: str,
    timeout: float = 120,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``sharetxn recover --checkpoint DIR --json``: a dry run."""
    return run_cli(
        "recover",
        "--checkpoint",
        str(checkpoint),
        "--bootstrap-server",
        bootstrap,
        "--json",
        *more,
        timeout=timeout,
        env=env,
    )
