"""The exit codes of every ``sharetxn`` command: one table for all of them.

Admin commands (``topics``, ``configs``, ``share-groups``, ``consumer-groups``) use 0, 1,
64, 66, 69 and 130; the recovery tool (``txn``, ``recover``) also uses 1 for "found", 2, 3
and 4.  64, 66 and 69 are the BSD ``sysexits`` numbers (EX_USAGE, EX_NOINPUT,
EX_UNAVAILABLE); 130 is the shell's code for a command stopped by Ctrl-C (128 + SIGINT).
Every command answers 66 for a topic, partition, group or transactional id the cluster
does not have, and 69 only when the cluster cannot be reached.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from enum import IntEnum
from typing import NoReturn


class ExitCode(IntEnum):
    OK = 0  # done; for the recovery tool: nothing to do
    FAILED = 1  # the broker refused at least one item; for the recovery tool: something found
    ACTED = 2  # the recovery tool changed something (--execute)
    REFUSED = 3  # a safety rule forbids the action
    RACED = 4  # the state changed between plan and action
    USAGE = 64  # bad arguments or input
    NOT_FOUND = 66  # an unknown topic, partition, group or transactional id
    UNAVAILABLE = 69  # the cluster could not be reached or failed a whole request
    INTERRUPTED = 130  # Ctrl-C

    # The recovery tool's names for the same numbers.
    NOTHING_TO_DO = 0
    FOUND = 1


EXIT_CODES_HELP = """exit codes (every sharetxn command):
  0  done (nothing to do)     1  an item failed, or something was found
  2  acted (--execute)        3  refused by a safety rule
  4  raced (state changed)    64 usage error
  66 not found (topic, partition, group, transactional id)
  69 cluster unreachable      130 interrupted (Ctrl-C)
"""


class UsageExitParser(argparse.ArgumentParser):
    """An argparse parser whose errors exit with 64 (EX_USAGE) instead of 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message}\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras
