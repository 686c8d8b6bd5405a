"""Errors of the Spark integration: misconfiguration and batches that cannot be committed.

``ResolveError`` and ``DecidedBatchAbortedError`` are raised by the commit phase
(``producer.twophase.commit_phase``), where they are defined; they are imported here, where
the Spark integration's users catch them.
"""

from __future__ import annotations

from producer.twophase.errors import DecidedBatchAbortedError, ResolveError
from txn.errors import SharetxnError

__all__ = ["BatchFencedError", "DecidedBatchAbortedError", "ResolveError", "SparkConfigError"]


class SparkConfigError(SharetxnError, ValueError):
    """The query is configured so that exactly-once cannot hold; raised before any work."""


class BatchFencedError(SharetxnError):
    """A prepared transaction of the batch is no longer the recorded one.

    A re-run or retried task fenced it (or it was ended by someone else); committing the
    batch would lose or duplicate records, so the batch fails and the restarted query
    aborts it and runs it again.
    """
