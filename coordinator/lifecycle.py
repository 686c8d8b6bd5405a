"""A coordinator's lifecycle, as Kafka's ``CoordinatorRuntime`` reports it to requests."""

from __future__ import annotations

from txn.errors import ErrorCode


class CoordinatorLifecycle:
    """Loading -> loaded -> closed; ``availability`` is what a request is answered with."""

    _loaded: bool = False
    _closed: bool = False

    def availability(self) -> ErrorCode:
        """NONE once loaded; COORDINATOR_LOAD_IN_PROGRESS before, NOT_AVAILABLE after close."""
        if self._closed:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not self._loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def _mark_loaded(self) -> None:
        self._loaded = True
        self._closed = False

    def _mark_closed(self) -> None:
        self._closed = True
