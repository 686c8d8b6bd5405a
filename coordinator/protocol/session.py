"""One connection's security state: its listener, client, principal and SASL progress.

Below both ``security_gate`` (which creates and advances it) and ``acl_handlers`` (which
authorize on its principal).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coordinator.security.listeners import Listener
from coordinator.security.sasl import SaslServer
from coordinator.security.tls import ANONYMOUS

__all__ = ["Session"]


@dataclass(slots=True)
class Session:
    listener: Listener
    client_host: str
    principal: str = ANONYMOUS
    authenticated: bool = True
    mechanism: str | None = None
    sasl: SaslServer | None = None
    #: Authenticated with a delegation token (Kafka's ``KafkaPrincipal.tokenAuthenticated``).
    token_authenticated: bool = False
    #: Set when the response being sent must be the connection's last.
    close_after_response: bool = False
    #: KIP-368: when the SASL session ends (ms on the broker's clock), None: never.
    expiry_ms: int | None = None
    #: While re-authenticating: the principal the session had (it must not change).
    reauth_from: str | None = None
    #: When the last re-authentication began (at most one a second).
    reauth_started_ms: int | None = None
    #: A re-authentication that asked for another mechanism: its refusal.
    reauth_refusal: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
