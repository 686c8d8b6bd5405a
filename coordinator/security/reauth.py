"""KIP-368 re-authentication: how long a SASL session lives, sans-IO.

A session authenticated over SASL lives ``connections.max.reauth.ms`` (per listener and
mechanism; 0 is no limit) or until its credential expires (an OAUTHBEARER token's
``exp``), whichever comes first; SaslAuthenticate v1+ tells the client that lifetime and the
client re-authenticates on the same connection (SaslHandshake then SaslAuthenticate) before
it ends.  As Kafka's ``SaslServerAuthenticator`` and ``SocketServer``: a request other than
SaslHandshake arriving after the session's end closes the connection unanswered; a
SaslHandshake starts re-authentication (at most one a second), which must keep the
mechanism and the principal, else the connection is closed.
"""

from __future__ import annotations

from typing import Final

#: Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS.
MIN_REAUTH_INTERVAL_MS: Final = 1000


def session_lifetime_ms(
    now_ms: int, credential_expiry_ms: int | None, max_reauth_ms: int
) -> tuple[int, int | None]:
    """(the SessionLifetimeMs to answer, the session's end on the clock or None: no end)."""
    limited = max_reauth_ms > 0
    if credential_expiry_ms is None and not limited:
        return 0, None
    if credential_expiry_ms is None:
        lifetime = max_reauth_ms
    elif not limited:
        lifetime = credential_expiry_ms - now_ms
    else:
        lifetime = min(credential_expiry_ms - now_ms, max_reauth_ms)
    lifetime = max(0, lifetime)
    return lifetime, now_ms + lifetime


def principal_change_message(previous: str, current: str) -> str:
    """Kafka's message (principals printed TYPE.NAME) for a re-authentication as someone else."""

    def dotted(principal: str) -> str:
        kind, _sep, name = principal.partition(":")
        return f"{kind}.{name}"

    return (
        "Cannot change principals during re-authentication from "
        f"{dotted(previous)}: {dotted(current)}"
    )


def mechanism_change_message(requested: str, previous: str) -> str:
    return (
        f"SASL mechanism '{requested}' requested by client is not supported for "
        f"re-authentication of mechanism '{previous}'"
    )
