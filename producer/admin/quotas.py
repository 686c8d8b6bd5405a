"""Client quota administration for ``Admin`` (Kafka's ``describeClientQuotas`` and
``alterClientQuotas``, KIP-546).

An entity is a mapping of entity type (``user``, ``client-id``, ``ip``) to a name, None
being the type's default.  Mixed into ``producer.admin.Admin``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from producer.protocol.client import KafkaClient, check_error
from txn.api_keys import ApiKey
from txn.errors import ErrorCode

__all__ = [
    "MATCH_DEFAULT",
    "MATCH_EXACT",
    "MATCH_SPECIFIED",
    "ClientQuotaAdmin",
    "QuotaAlterResult",
    "QuotaEntity",
]

MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_SPECIFIED = 2

#: A quota entity: (entity type, name or None for the default), in the broker's order.
QuotaEntity = tuple[tuple[str, str | None], ...]


@dataclass(frozen=True, slots=True)
class QuotaAlterResult:
    entity: QuotaEntity
    error: ErrorCode
    message: str | None


class ClientQuotaAdmin:
    """The client-quota part of ``Admin`` (it needs ``self.client``)."""

    client: KafkaClient

    def describe_client_quotas(
        self, components: Sequence[tuple[str, int, str | None]], *, strict: bool = False
    ) -> dict[QuotaEntity, dict[str, float]]:
        """DescribeClientQuotas: (entity type, match type, match) filter components."""
        body = {
            "components": [
                {"entity_type": t, "match_type": m, "match": name} for t, m, name in components
            ],
            "strict": strict,
        }
        resp = self.client.call(lambda: self.client.send(None, ApiKey.DESCRIBE_CLIENT_QUOTAS, body))
        check_error(resp.error_code, resp.error_message)
        return {
            tuple((str(e.entity_type), e.entity_name) for e in entry.entity): {
                str(v.key): float(v.value) for v in entry.values
            }
            for entry in resp.entries or ()
        }

    def alter_client_quotas(
        self,
        entity: Mapping[str, str | None],
        set_quotas: Mapping[str, float] | None = None,
        remove: list[str] | None = None,
        *,
        validate_only: bool = False,
    ) -> QuotaAlterResult:
        """AlterClientQuotas of one entity: set some keys, remove others."""
        ops: list[dict[str, Any]] = [
            {"key": k, "value": float(v), "remove": False} for k, v in (set_quotas or {}).items()
        ]
        ops += [{"key": k, "value": 0.0, "remove": True} for k in remove or []]
        body = {
            "entries": [
                {
                    "entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
                    "ops": ops,
                }
            ],
            "validate_only": validate_only,
        }
        resp = self.client.call(lambda: self.client.send(None, ApiKey.ALTER_CLIENT_QUOTAS, body))
        entry = resp.entries[0]
        return QuotaAlterResult(
            tuple((str(e.entity_type), e.entity_name) for e in entry.entity),
            ErrorCode(int(entry.error_code)),
            entry.error_message,
        )
