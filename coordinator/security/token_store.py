"""Delegation tokens kept in ``__cluster_metadata``, as Kafka's controller keeps them.

Each operation's records (``coordinator.security.tokens``) are appended to the metadata log
and flushed before they are replayed and answered; the log is replayed when the broker
starts.  With tokens enabled (a secret key), expired tokens are removed every
``delegation.token.expiry.check.interval.ms`` on the broker's Clock (Kafka's controller
sweep); without one nothing is scheduled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from coordinator.log.storage import PartitionLog
from coordinator.security.tokens import (
    DelegationTokens,
    Record,
    TokenSettings,
    decode_record,
    encode_record,
    new_token_id,
)
from txn.batch import build_batch
from txn.clock import Clock, Timer
from txn.config import BrokerConfig
from txn.txn_log import read_records

__all__ = ["DelegationTokenStore"]

log = logging.getLogger("sharetxn.security")


class DelegationTokenStore:
    """The tokens of the metadata log ``log`` and their periodic expiry."""

    def __init__(
        self,
        metadata_log: PartitionLog,
        config: BrokerConfig,
        clock: Clock,
        new_id: Callable[[], str] = new_token_id,
    ) -> None:
        self._log = metadata_log
        self._clock = clock
        self.tokens = DelegationTokens(TokenSettings.of(config), new_id)
        for _header, batch in metadata_log.batches(metadata_log.log_start_offset):
            for key, value in read_records(batch):
                record = decode_record(key, value)
                if record is not None:
                    self.tokens.replay(record)
        self._timer: Timer | None = None
        if self.tokens.enabled:
            self._schedule()

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def apply(self, records: Sequence[Record]) -> None:
        """Append ``records`` durably, then replay them (the only mutation)."""
        if not records:
            return
        now_ms = self._clock.now_ms()
        # One record a batch: the topic registry reads the log's batches one record each.
        for record in records:
            batch = build_batch([encode_record(record)], timestamp_ms=now_ms)
            self._log.append(batch, max(now_ms, 0))
        self._log.flush()
        for record in records:
            self.tokens.replay(record)

    def _schedule(self) -> None:
        interval = self.tokens.settings.expiry_check_interval_ms
        self._timer = self._clock.schedule(interval, self._sweep)

    def _sweep(self) -> None:
        records = self.tokens.sweep(self._clock.now_ms())
        for record in records:
            log.info("Delegation token expired: %s", getattr(record, "token_id", "?"))
        try:
            self.apply(records)
        finally:
            self._schedule()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
