"""Delegation-token administration for ``Admin`` (KIP-48, KIP-373), as Kafka's Admin
``createDelegationToken``/``renewDelegationToken``/``expireDelegationToken``/
``describeDelegationToken``.

Mixed into ``producer.admin.Admin``; any broker answers.  Errors raise the typed exception
of their code (``txn.errors``: DelegationTokenAuthDisabledError, ...).
"""

from __future__ import annotations

import base64
import datetime
import struct
from dataclasses import dataclass
from typing import Any

from kio.serial import entity_reader

from producer.protocol.client import CLIENT_MAX_VERSIONS, KafkaClient, check_error
from txn.api_keys import ApiKey
from txn.kip1289_schema import load_response as load_response_schema

__all__ = ["DelegationToken", "DelegationTokenAdmin"]


def _principal(text: str) -> tuple[str, str]:
    """("User", "alice") of "User:alice" (a bare name is a user)."""
    kind, sep, name = text.partition(":")
    return (kind, name) if sep else ("User", text)


def _ms(value: Any) -> int:
    """A timestamp field as epoch milliseconds (kio decodes some as ``datetime``)."""
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    return int(value)


@dataclass(frozen=True, slots=True)
class DelegationToken:
    """A token as Kafka's DelegationToken: its information and its HMAC."""

    token_id: str
    hmac: bytes
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp_ms: int
    expiry_timestamp_ms: int
    max_timestamp_ms: int

    @property
    def hmac_base64(self) -> str:
        """The password a client authenticates with (SCRAM, ``tokenauth="true"``)."""
        return base64.b64encode(self.hmac).decode()


class DelegationTokenAdmin:
    """The delegation-token half of ``Admin`` (it needs ``self.client``)."""

    client: KafkaClient

    def _token_call(self, api_key: ApiKey, body: dict[str, Any]) -> Any:
        """The response of ``api_key``; an error raises.  Its error code is read first: an
        error answer may carry -1 timestamps, which kio refuses to decode."""

        def attempt() -> Any:
            conn = self.client._connection(None)  # noqa: SLF001 - raw read below
            version = conn.pick_version(api_key, CLIENT_MAX_VERSIONS[api_key])
            raw = conn.request_raw(api_key, version, body)
            (code,) = struct.unpack_from(">h", raw, 0)
            check_error(code)
            value, _ = entity_reader(load_response_schema(api_key, version))(raw, 0)
            return value

        return self.client.call(attempt)

    def create_delegation_token(
        self,
        *,
        renewers: list[str] | None = None,
        owner: str | None = None,
        max_lifetime_ms: int = -1,
    ) -> DelegationToken:
        """A new token for ``owner`` (default: the authenticated user), renewable by
        ``renewers`` ("User:name"); ``max_lifetime_ms`` -1: the broker's maximum."""
        owner_type, owner_name = _principal(owner) if owner else (None, None)
        body = {
            "owner_principal_type": owner_type,
            "owner_principal_name": owner_name,
            "renewers": [
                {"principal_type": t, "principal_name": n}
                for t, n in (_principal(r) for r in renewers or [])
            ],
            "max_lifetime": datetime.timedelta(milliseconds=max_lifetime_ms),
        }
        resp = self._token_call(ApiKey.CREATE_DELEGATION_TOKEN, body)
        requester_name = getattr(resp, "token_requester_principal_name", "")
        requester_type = getattr(resp, "token_requester_principal_type", "")
        return DelegationToken(
            token_id=str(resp.token_id),
            hmac=bytes(resp.hmac),
            owner=f"{resp.principal_type}:{resp.principal_name}",
            requester=f"{requester_type}:{requester_name}" if requester_name else "",
            renewers=tuple(renewers or ()),
            issue_timestamp_ms=_ms(resp.issue_timestamp),
            expiry_timestamp_ms=_ms(resp.expiry_timestamp),
            max_timestamp_ms=_ms(resp.max_timestamp),
        )

    def renew_delegation_token(self, hmac: bytes, renew_period_ms: int = -1) -> int:
        """Renew the token of ``hmac``; its new expiry (epoch ms).  -1: the broker's
        ``delegation.token.expiry.time.ms``."""
        body = {"hmac": hmac, "renew_period": datetime.timedelta(milliseconds=renew_period_ms)}
        resp = self._token_call(ApiKey.RENEW_DELEGATION_TOKEN, body)
        return _ms(resp.expiry_timestamp)

    def expire_delegation_token(self, hmac: bytes, expiry_time_period_ms: int = -1) -> int:
        """Expire the token of ``hmac`` in ``expiry_time_period_ms`` (negative: now, and it
        is removed); its new expiry (epoch ms)."""
        body = {
            "hmac": hmac,
            "expiry_time_period": datetime.timedelta(milliseconds=expiry_time_period_ms),
        }
        resp = self._token_call(ApiKey.EXPIRE_DELEGATION_TOKEN, body)
        return _ms(resp.expiry_timestamp)

    def describe_delegation_tokens(self, owners: list[str] | None = None) -> list[DelegationToken]:
        """The tokens the caller may see, of ``owners`` ("User:name") or all (None)."""
        body = {
            "owners": None
            if owners is None
            else [
                {"principal_type": t, "principal_name": n}
                for t, n in (_principal(o) for o in owners)
            ]
        }
        resp = self._token_call(ApiKey.DESCRIBE_DELEGATION_TOKEN, body)
        out: list[DelegationToken] = []
        for t in resp.tokens:
            requester_name = getattr(t, "token_requester_principal_name", "")
            requester_type = getattr(t, "token_requester_principal_type", "")
            out.append(
                DelegationToken(
                    token_id=str(t.token_id),
                    hmac=bytes(t.hmac),
                    owner=f"{t.principal_type}:{t.principal_name}",
                    requester=f"{requester_type}:{requester_name}" if requester_name else "",
                    renewers=tuple(f"{r.principal_type}:{r.principal_name}" for r in t.renewers),
                    issue_timestamp_ms=_ms(t.issue_timestamp),
                    expiry_timestamp_ms=_ms(t.expiry_timestamp),
                    max_timestamp_ms=_ms(t.max_timestamp),
                )
            )
        return out
