"""The feature levels ApiVersions advertises: those of Kafka 4.4's features sharetxn implements.

Kafka 4.4 finalizes (``kafka-storage format`` defaults) ``metadata.version`` 4.4-IV2,
``transaction.version`` 2, ``group.version`` 1, ``share.version`` 2,
``eligible.leader.replicas.version`` 1 and ``streams.version`` 1.  A level tells clients what
the broker does, so sharetxn advertises only what it implements:

- ``group.version`` 1: KIP-848's consumer rebalance protocol (ConsumerGroupHeartbeat).
- ``share.version`` 2: share groups (KIP-932, level 1) and their dead-letter queues
  (KIP-1191, level 2: ``coordinator.share_dead_letters``), all level 2 gates in Kafka 4.4.
- ``transaction.version`` 1.  Level 2 is KIP-890 part 2: clients then bump the epoch at every
  EndTxn (v5) and add partitions implicitly with Produce v12, which sharetxn does not serve
  (Produce up to v10), so a Java producer told level 2 could not produce in a transaction.
  Level 1 (the coordinator's flexible log records in Kafka) changes nothing a client sends.
- ``share.transaction.version`` 1: KIP-1289, sharetxn's own (``txn.kip1289_schema``).

Left out: ``metadata.version`` and ``kraft.version`` (there is no KRaft metadata log or
quorum here), ``eligible.leader.replicas.version`` (no replicas) and ``streams.version`` (no
streams groups).  Each is supported at exactly its finalized level (sharetxn cannot turn
share groups or KIP-848 off), so UpdateFeatures answers as Kafka's controller answers for
levels it does not support: a request for the current level succeeds, any other level is
INVALID_UPDATE_VERSION ("only supports versions 1-1").
"""

from __future__ import annotations

from typing import Final

from coordinator.protocol.cluster_messages import (
    FinalizedFeatureKey,
    SupportedFeatureKey,
    UpdatableFeatureResult,
    UpdateFeaturesResponse,
)
from txn.errors import ErrorCode
from txn.kip1289_schema import KIP1289_FEATURE, KIP1289_FEATURE_LEVEL

#: feature name -> (supported min, supported max, finalized level)
FEATURES: Final[dict[str, tuple[int, int, int]]] = {
    "group.version": (1, 1, 1),
    "share.version": (2, 2, 2),
    "transaction.version": (1, 1, 1),
    KIP1289_FEATURE: (KIP1289_FEATURE_LEVEL, KIP1289_FEATURE_LEVEL, KIP1289_FEATURE_LEVEL),
}

#: The finalized features' epoch (Kafka's is the metadata log offset that set them; these
#: never change).
FINALIZED_EPOCH: Final = 0


def supported_features(api_version: int) -> tuple[SupportedFeatureKey, ...]:
    """As Kafka: before ApiVersions v4 (KIP-1022) a feature whose supported range starts at
    0 is left out, as older clients cannot parse it."""
    return tuple(
        SupportedFeatureKey(name=name, min_version=lo, max_version=hi)
        for name, (lo, hi, _level) in sorted(FEATURES.items())
        if api_version >= 4 or lo >= 1
    )


def finalized_features() -> tuple[FinalizedFeatureKey, ...]:
    return tuple(
        FinalizedFeatureKey(name=name, max_version_level=level, min_version_level=level)
        for name, (_lo, _hi, level) in sorted(FEATURES.items())
        if level > 0
    )


def _refusal(name: str, level: int, node_id: int) -> str | None:
    """Kafka's controller's reason for refusing ``name`` at ``level`` (None: accepted), in
    its order.  The current level is always accepted; no other is supported here."""
    if level < 0:
        reason = "A feature version cannot be less than 0."
    elif name not in FEATURES:
        reason = f"Local controller {node_id} does not support this feature."
    else:
        lo, hi, _level = FEATURES[name]
        if lo <= level <= hi:
            return None
        reason = f"Local controller {node_id} only supports versions {lo}-{hi}"
    return f"Invalid update version {level} for feature {name}. {reason}"


def update_features(
    updates: list[tuple[str, int]], node_id: int, api_version: int
) -> UpdateFeaturesResponse:
    """UpdateFeatures: all or nothing, as Kafka; validate-only or not, nothing changes."""
    for name, level in updates:
        reason = _refusal(name, level, node_id)
        if reason is not None:
            return UpdateFeaturesResponse(
                error_code=ErrorCode.INVALID_UPDATE_VERSION,
                error_message="The update failed for all features since the following"
                f" feature had an error: {reason}",
            )
    results = tuple(
        UpdatableFeatureResult(feature=name, error_code=ErrorCode.NONE, error_message="NONE")
        for name, _level in updates
    )
    return UpdateFeaturesResponse(
        error_code=ErrorCode.NONE, results=results if api_version < 2 else ()
    )
