"""The Python examples of docs/spark.md, run as scripts with their placeholders replaced."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from producer.spark.demo import Verdict, verify

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "spark.md"
EPILOGUE = """
query.processAllAvailable()
query.stop()
eos.close(spark)
spark.stop()
print("GUIDE-DONE", flush=True)
"""


def guide_example(name: str) -> str:
    """The code of the guide's ``<!-- example: NAME -->`` Python block."""
    block = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert block, f"the {name} example is missing from docs/spark.md"
    return block.group(1)


def run_guide_script(path: Path, code: str, timeout: float = 240) -> None:
    """``code`` and the epilogue written to ``path`` and run by this interpreter to its end."""
    path.write_text(code + EPILOGUE)
    done = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert "GUIDE-DONE" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]


def verify_orders(bootstrap: str) -> Verdict:
    """The verdict on the spark example's 1,000 orders (its input, output, group and prefix)."""
    return verify(
        bootstrap,
        1_000,
        topic="orders",
        output="orders-enriched",
        group="orders-enrich",
        prefix="sharetxn-spark",
    )
