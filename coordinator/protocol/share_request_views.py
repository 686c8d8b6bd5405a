"""Version-free views of the requests of the share group APIs and KIP-1289's.

``wire.decode_request`` hands a handler the kio entity of the negotiated version; a handler
reads it through the view of its API (``DecodedRequest[XRequestView]``), a ``Protocol``
naming the fields every supported version has (``api_versions``), with the types kio gives
them (kio's nominal ints and strings are ``int`` and ``str`` subclasses).  A field some
versions lack is read with ``wire.optional`` and a declared type; where versions differ in
shape, ``<Api>RequestV<low>To<high>View`` names the fields of those versions (the handler
casts to it after testing ``api_version``).
tests/unit/test_request_views.py checks each view against every supported version's schema.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Protocol


class ShareGroupHeartbeatRequestView(Protocol):
    """ShareGroupHeartbeat request, v1-v1."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None


class ShareGroupDescribeRequestView(Protocol):
    """ShareGroupDescribe request, v1-v1."""

    group_ids: tuple[str, ...]
    include_authorized_operations: bool


class AcknowledgementBatchView(Protocol):
    """``acknowledgement_batches`` of ShareFetchPartitionView."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]


class ShareFetchPartitionView(Protocol):
    """``partitions`` of ShareFetchTopicView."""

    partition_index: int
    acknowledgement_batches: tuple[AcknowledgementBatchView, ...]


class ShareFetchTopicView(Protocol):
    """``topics`` of ShareFetchRequestView."""

    topic_id: uuid.UUID | None
    partitions: tuple[ShareFetchPartitionView, ...]


class ForgottenTopicView(Protocol):
    """``forgotten_topics_data`` of ShareFetchRequestView."""

    topic_id: uuid.UUID | None
    partitions: tuple[int, ...]


class ShareFetchRequestView(Protocol):
    """ShareFetch request, v1-v2.

    Only in some versions: ``is_renew_ack``, ``share_acquire_mode``.
    """

    group_id: str | None
    member_id: str | None
    share_session_epoch: int
    max_wait: datetime.timedelta
    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int
    topics: tuple[ShareFetchTopicView, ...]
    forgotten_topics_data: tuple[ForgottenTopicView, ...]


class AcknowledgePartitionAcknowledgementBatchView(Protocol):
    """``acknowledgement_batches`` of AcknowledgePartitionView."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]


class AcknowledgePartitionView(Protocol):
    """``partitions`` of AcknowledgeTopicView."""

    partition_index: int
    acknowledgement_batches: tuple[AcknowledgePartitionAcknowledgementBatchView, ...]


class AcknowledgeTopicView(Protocol):
    """``topics`` of ShareAcknowledgeRequestView."""

    topic_id: uuid.UUID | None
    partitions: tuple[AcknowledgePartitionView, ...]


class ShareAcknowledgeRequestView(Protocol):
    """ShareAcknowledge request, v1-v2. Only in some versions: ``is_renew_ack``."""

    group_id: str | None
    member_id: str | None
    share_session_epoch: int
    topics: tuple[AcknowledgeTopicView, ...]


class AddShareAcksToTxnTopicView(Protocol):
    """``topics`` of AddShareAcksToTxnRequestView."""

    name: str
    partitions: tuple[int, ...]


class AddShareAcksToTxnRequestView(Protocol):
    """AddShareAcksToTxn request, v0-v0."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str
    topics: tuple[AddShareAcksToTxnTopicView, ...]


class TxnAcknowledgementBatchView(Protocol):
    """``acknowledgement_batches`` of TxnShareAcknowledgePartitionView."""

    first_offset: int
    last_offset: int
    acknowledge_type: int


class TxnShareAcknowledgePartitionView(Protocol):
    """``partitions`` of TxnShareAcknowledgeTopicView."""

    partition: int
    acknowledgement_batches: tuple[TxnAcknowledgementBatchView, ...]


class TxnShareAcknowledgeTopicView(Protocol):
    """``topics`` of TxnShareAcknowledgeRequestView."""

    topic_id: uuid.UUID | None
    partitions: tuple[TxnShareAcknowledgePartitionView, ...]


class TxnShareAcknowledgeRequestView(Protocol):
    """TxnShareAcknowledge request, v0-v0."""

    group_id: str
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: tuple[TxnShareAcknowledgeTopicView, ...]
    member_id: str | None


class DescribeShareGroupOffsetsRequestTopicView(Protocol):
    """``topics`` of DescribeShareGroupOffsetsRequestGroupView."""

    topic_name: str
    partitions: tuple[int, ...]


class DescribeShareGroupOffsetsRequestGroupView(Protocol):
    """``groups`` of DescribeShareGroupOffsetsRequestView."""

    group_id: str
    topics: tuple[DescribeShareGroupOffsetsRequestTopicView, ...] | None


class DescribeShareGroupOffsetsRequestView(Protocol):
    """DescribeShareGroupOffsets request, v0-v1."""

    groups: tuple[DescribeShareGroupOffsetsRequestGroupView, ...]


class AlterShareGroupOffsetsRequestPartitionView(Protocol):
    """``partitions`` of AlterShareGroupOffsetsRequestTopicView."""

    partition_index: int
    start_offset: int


class AlterShareGroupOffsetsRequestTopicView(Protocol):
    """``topics`` of AlterShareGroupOffsetsRequestView."""

    topic_name: str
    partitions: tuple[AlterShareGroupOffsetsRequestPartitionView, ...]


class AlterShareGroupOffsetsRequestView(Protocol):
    """AlterShareGroupOffsets request, v0-v0."""

    group_id: str
    topics: tuple[AlterShareGroupOffsetsRequestTopicView, ...]


class DeleteShareGroupOffsetsRequestTopicView(Protocol):
    """``topics`` of DeleteShareGroupOffsetsRequestView."""

    topic_name: str


class DeleteShareGroupOffsetsRequestView(Protocol):
    """DeleteShareGroupOffsets request, v0-v0."""

    group_id: str
    topics: tuple[DeleteShareGroupOffsetsRequestTopicView, ...]


class DescribeSharePendingAcksRequestView(Protocol):
    """DescribeSharePendingAcks request, v0-v0."""

    producer_ids: tuple[int, ...]
