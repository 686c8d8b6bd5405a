"""Errors of the Spark integration: misconfiguration and batches that cannot be committed."""

from __future__ import annotations

from txn.errors import SharetxnError


class SparkConfigError(SharetxnError, ValueError):
    """The query is configured so that exactly-once cannot hold; raised before any work."""


class BatchFencedError(SharetxnError):
    """A prepared transaction of the batch is no longer the recorded one.

    A re-run or retried task fenced it (or it was ended by someone else); committing the
    batch would lose or duplicate records, so the batch fails and the restarted query
    aborts it and runs it again.
    """


class ResolveError(SharetxnError):
    """A decided batch could not be completed; retried by the next commit point."""
