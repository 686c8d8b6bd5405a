"""``sharetxn copy-demo``: transactional copies across a broker kill -9 (``chaos.demo``)."""

from __future__ import annotations

import argparse
import random

from rich.console import Console

from chaos.demo import run_demo, summary_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--records", type=int, default=2000, help="records to copy (default 2000)")
    parser.add_argument(
        "--partitions", type=int, default=3, help="partitions per topic (default 3)"
    )
    parser.add_argument(
        "--batch", type=int, default=50, help="records per transaction (default 50)"
    )
    parser.add_argument(
        "--abort-rate",
        type=float,
        default=0.2,
        help="share of transactions aborted on purpose (default 0.2)",
    )
    parser.add_argument("--seed", type=int, default=None, help="random seed (printed if not given)")
    parser.add_argument("--no-kill", action="store_true", help="do not kill the broker midway")
    parser.add_argument(
        "--data-dir", default=None, help="broker data directory (default: a temporary one)"
    )


def run(args: argparse.Namespace) -> int:
    console = Console()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    console.print(f"[bold]sharetxn demo[/] seed={seed} records={args.records}")
    stats = run_demo(
        records=args.records,
        partitions=args.partitions,
        batch=args.batch,
        abort_rate=args.abort_rate,
        seed=seed,
        kill=not args.no_kill,
        data_dir=args.data_dir,
        console=console,
    )
    console.print(summary_table(stats))
    if stats.ok:
        console.print(
            "[bold green]exactly once: every committed record is in the output once, "
            "nothing lost[/]"
        )
        return 0
    console.print(f"[bold red]exactly-once violated (seed {seed})[/]")
    return 1
