"""DescribeClientQuotas and AlterClientQuotas (KIP-546), as Kafka 4.4 answers them.

With an authorizer, DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster and
AlterClientQuotas ALTER_CONFIGS on it (as Kafka's KafkaApis and ControllerApis).  A bad
filter fails the whole DescribeClientQuotas; AlterClientQuotas answers one result per entity
(``coordinator.quotas.entities``).  Changes are recorded in ``__cluster_metadata`` before
they are answered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from coordinator.protocol.admin_request_views import (
    AlterClientQuotasRequestView,
    DescribeClientQuotasRequestView,
)
from coordinator.protocol.quota_messages import (
    AlterClientQuotasEntry,
    AlterClientQuotasResponse,
    DescribeClientQuotasEntry,
    DescribeClientQuotasResponse,
    QuotaEntityData,
    QuotaValueData,
)
from coordinator.protocol.responses import api, handler_table
from coordinator.protocol.wire import DecodedRequest
from coordinator.quotas.entities import AlterEntry, DescribeFilter, QuotaError
from coordinator.quotas.store import ClientQuotas
from coordinator.security.acls import CLUSTER_NAME, AclOperation, Authorizer, ResourceType
from txn.api_keys import ApiKey
from txn.errors import ErrorCode

if TYPE_CHECKING:
    from coordinator.protocol.session import Session

__all__ = ["QuotaHandlers"]

log = logging.getLogger("sharetxn.quotas")

_CLUSTER_DENIED = "Cluster authorization failed."


def _entity_data(entity: tuple[tuple[str, str | None], ...]) -> tuple[QuotaEntityData, ...]:
    return tuple(QuotaEntityData(entity_type=t, entity_name=n) for t, n in entity)


class QuotaHandlers:
    """The client quota APIs, on the broker's ``ClientQuotas``."""

    def __init__(self, quotas: ClientQuotas, authorizer: Callable[[], Authorizer | None]) -> None:
        self.quotas = quotas
        self._authorizer = authorizer
        self.table: dict[int, Any] = handler_table(self)

    def _cluster_allowed(self, session: Session, operation: AclOperation) -> bool:
        authorizer = self._authorizer()
        return authorizer is None or authorizer.authorize(
            session.principal, session.client_host, operation, ResourceType.CLUSTER, CLUSTER_NAME
        )

    @api(ApiKey.DESCRIBE_CLIENT_QUOTAS)
    async def describe_client_quotas(
        self, session: Session, req: DecodedRequest[DescribeClientQuotasRequestView]
    ) -> DescribeClientQuotasResponse:
        if not self._cluster_allowed(session, AclOperation.DESCRIBE_CONFIGS):
            return DescribeClientQuotasResponse(
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                error_message=_CLUSTER_DENIED,
                entries=None,
            )
        components = [
            DescribeFilter(str(c.entity_type), int(c.match_type), c.match)
            for c in req.body.components
        ]
        try:
            found = self.quotas.describe(components, bool(req.body.strict))
        except QuotaError as exc:
            return DescribeClientQuotasResponse(
                error_code=exc.code, error_message=exc.message, entries=None
            )
        return DescribeClientQuotasResponse(
            error_code=ErrorCode.NONE,
            error_message="",  # Kafka's answer carries an empty message, not null
            entries=tuple(
                DescribeClientQuotasEntry(
                    entity=_entity_data(entity),
                    values=tuple(QuotaValueData(key=k, value=v) for k, v in sorted(values.items())),
                )
                for entity, values in found
            ),
        )

    @api(ApiKey.ALTER_CLIENT_QUOTAS)
    async def alter_client_quotas(
        self, session: Session, req: DecodedRequest[AlterClientQuotasRequestView]
    ) -> AlterClientQuotasResponse:
        entries = [
            AlterEntry(
                entity=tuple((str(e.entity_type), e.entity_name) for e in entry.entity),
                ops=tuple(
                    (str(op.key), None if op.remove else float(op.value)) for op in entry.ops
                ),
            )
            for entry in req.body.entries
        ]
        if not self._cluster_allowed(session, AclOperation.ALTER_CONFIGS):
            entities = {tuple(sorted(dict(e.entity).items())): None for e in entries}
            return AlterClientQuotasResponse(
                entries=tuple(
                    AlterClientQuotasEntry(
                        error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        error_message=_CLUSTER_DENIED,
                        entity=_entity_data(entity),
                    )
                    for entity in entities
                )
            )
        validate_only = bool(req.body.validate_only)
        results = self.quotas.alter(entries, validate_only)
        if not validate_only and any(r is None for r in results.values()):
            log.info("%s altered client quotas of %s", session.principal, list(results))
        return AlterClientQuotasResponse(
            entries=tuple(
                AlterClientQuotasEntry(
                    error_code=ErrorCode.NONE if error is None else error.code,
                    error_message=None if error is None else error.message,
                    entity=_entity_data(entity),
                )
                for entity, error in results.items()
            )
        )
