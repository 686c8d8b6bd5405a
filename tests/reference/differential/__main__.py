"""``python -m tests.reference.differential --kafka HOST:PORT --sharetxn HOST:PORT [names]``.

Without addresses it starts Apache Kafka (the reference harness) and a sharetxn broker with
``SETTINGS``, runs every scenario (or those named, or matching ``-k``) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import sys

from tests.reference.differential.suite import run_suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reference.differential")
    parser.add_argument("--kafka", help="an Apache Kafka bootstrap (default: start one)")
    parser.add_argument("--sharetxn", help="a sharetxn bootstrap (default: start one)")
    parser.add_argument("-k", default="", help="only scenarios whose name contains this")
    parser.add_argument("--show", action="store_true", help="print every observation")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    outcomes, text = run_suite(args.kafka, args.sharetxn, args.names or None, args.k)
    if args.show:
        for o in outcomes:
            print(f"== {o.name} [{o.status}]")
            print("kafka:   ", json.dumps(o.kafka))
            print("sharetxn:", json.dumps(o.sharetxn))
    print(text)
    return 1 if any(o.status == "open" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
