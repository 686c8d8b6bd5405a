"""Typed requests and responses of DescribeClientQuotas and AlterClientQuotas, named as
Kafka's newest schemas (``quota_handlers``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from txn.errors import ErrorCode

# -- requests (the fields every supported version has) ------------------------------------------


class QuotaComponentView(Protocol):
    """``components`` of DescribeClientQuotasRequestView."""

    entity_type: str
    match_type: int
    match: str | None


class DescribeClientQuotasRequestView(Protocol):
    """DescribeClientQuotas request, v0-v1."""

    components: tuple[QuotaComponentView, ...]
    strict: bool


class QuotaEntityView(Protocol):
    """``entity`` of an AlterClientQuotas entry."""

    entity_type: str
    entity_name: str | None


class QuotaOpView(Protocol):
    """``ops`` of an AlterClientQuotas entry."""

    key: str
    value: float
    remove: bool


class QuotaAlterEntryView(Protocol):
    """``entries`` of AlterClientQuotasRequestView."""

    entity: tuple[QuotaEntityView, ...]
    ops: tuple[QuotaOpView, ...]


class AlterClientQuotasRequestView(Protocol):
    """AlterClientQuotas request, v0-v1."""

    entries: tuple[QuotaAlterEntryView, ...]
    validate_only: bool


# -- responses ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class QuotaEntityData:
    entity_type: str
    entity_name: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class QuotaValueData:
    key: str
    value: float


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClientQuotasEntry:
    entity: tuple[QuotaEntityData, ...]
    values: tuple[QuotaValueData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClientQuotasResponse:
    error_code: ErrorCode
    error_message: str | None = None
    entries: tuple[DescribeClientQuotasEntry, ...] | None = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterClientQuotasEntry:
    error_code: ErrorCode
    error_message: str | None = None
    entity: tuple[QuotaEntityData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterClientQuotasResponse:
    entries: tuple[AlterClientQuotasEntry, ...]
