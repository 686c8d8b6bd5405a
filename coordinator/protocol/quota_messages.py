"""Typed responses of DescribeClientQuotas and AlterClientQuotas, named as Kafka's newest
schemas (``quota_handlers``; their request views are in ``admin_request_views``)."""

from __future__ import annotations

from dataclasses import dataclass

from txn.errors import ErrorCode

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
