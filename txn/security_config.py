"""Security configs of the broker (listeners, TLS, SASL, authorization), with Kafka's names.

Kept apart from ``txn.config`` so the security vocabulary reads in one place.
``listener.name.<listener>.<config>`` keys (Kafka's per-listener overrides, e.g.
``listener.name.sasl_plaintext.plain.sasl.jaas.config``) are accepted as strings
for the configs in ``LISTENER_OVERRIDABLE``, ``max.connections`` and
``<mechanism>.sasl.jaas.config``.
"""

from __future__ import annotations

from typing import Any, Final

# (name, type, default, doc[, choices]): turned into ``txn.config.ConfigDef`` entries there.
SECURITY_CONFIGS: Final[tuple[tuple[Any, ...], ...]] = (
    # --- listeners ---------------------------------------------------------------------------
    (
        "listeners",
        "str",
        None,
        "Comma-separated NAME://HOST:PORT listeners (unset: one PLAINTEXT listener, --listen).",
    ),
    (
        "advertised.listeners",
        "str",
        None,
        "NAME://HOST:PORT told to clients in Metadata and FindCoordinator (unset: listeners).",
    ),
    (
        "listener.security.protocol.map",
        "str",
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "Listener name to security protocol.",
    ),
    # --- TLS (PEM or PKCS12) ------------------------------------------------------------------
    ("ssl.keystore.type", "str", "JKS", "Format of the key store: PKCS12 or PEM (JKS is not)."),
    ("ssl.keystore.location", "str", None, "Key store file (PEM: private key and chain)."),
    ("ssl.keystore.certificate.chain", "str", None, "PEM certificate chain (inline)."),
    ("ssl.keystore.key", "str", None, "PEM private key (inline)."),
    ("ssl.keystore.password", "str", None, "Password of a PKCS12 key store (unused with PEM)."),
    ("ssl.key.password", "str", None, "Password of an encrypted PEM private key."),
    ("ssl.truststore.type", "str", "JKS", "Format of the trust store: PKCS12 or PEM."),
    ("ssl.truststore.location", "str", None, "Trust store file (PEM: CA certificates)."),
    ("ssl.truststore.certificates", "str", None, "Trusted CA certificates (inline PEM)."),
    ("ssl.truststore.password", "str", None, "Password of a PKCS12 trust store (optional)."),
    (
        "ssl.client.auth",
        "str",
        "none",
        "Client certificates: none, requested or required.",
        ("none", "requested", "required"),
    ),
    # --- SASL --------------------------------------------------------------------------------
    (
        "sasl.enabled.mechanisms",
        "str",
        "GSSAPI",
        "SASL mechanisms served (GSSAPI, PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER).",
    ),
    (
        "sasl.kerberos.service.name",
        "str",
        None,
        "GSSAPI: the Kerberos service name of the broker (its principal's first component).",
    ),
    (
        "sasl.kerberos.principal.to.local.rules",
        "str",
        "DEFAULT",
        "GSSAPI: rules mapping a Kerberos principal to the name of User:<name>, first match.",
    ),
    (
        "connections.max.reauth.ms",
        "int",
        0,
        "KIP-368: a SASL session's longest life before the client must re-authenticate on the"
        " connection (0: no limit beyond an OAUTHBEARER token's own expiry).",
    ),
    (
        "sasl.server.callback.handler.class",
        "str",
        None,
        "OAUTHBEARER token validation: unset (the unsecured validator) or"
        " org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler.",
    ),
    (
        "sasl.oauthbearer.jwks.endpoint.url",
        "str",
        None,
        "KIP-768: the JWKS (file: or https: URL) whose keys sign the accepted JWTs.",
    ),
    (
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        "int",
        3600000,
        "How often the JWKS is fetched again.",
    ),
    (
        "sasl.oauthbearer.expected.audience",
        "str",
        None,
        "Comma-separated audiences of which a JWT's aud claim must hold one.",
    ),
    ("sasl.oauthbearer.expected.issuer", "str", None, "The iss claim a JWT must have."),
    ("sasl.oauthbearer.sub.claim.name", "str", "sub", "The JWT claim naming the principal."),
    ("sasl.oauthbearer.scope.claim.name", "str", "scope", "The JWT claim holding its scope."),
    (
        "sasl.oauthbearer.clock.skew.seconds",
        "int",
        30,
        "Clock difference allowed between the broker and the token issuer.",
    ),
    # --- authorization -----------------------------------------------------------------------
    (
        "authorizer.class.name",
        "str",
        "",
        "Enables ACLs: org.apache.kafka.metadata.authorizer.StandardAuthorizer (or"
        " kafka.security.authorizer.AclAuthorizer).",
    ),
    ("super.users", "str", None, "Semicolon-separated principals allowed everything."),
    (
        "allow.everyone.if.no.acl.found",
        "bool",
        False,
        "Allow a request on a resource no ACL matches.",
    ),
    # --- delegation tokens (KIP-48; coordinator.security.tokens) -----------------------------
    (
        "delegation.token.secret.key",
        "str",
        None,
        "Secret key of the tokens' HMAC (unset or empty: delegation tokens are disabled).",
    ),
    (
        "delegation.token.max.lifetime.ms",
        "int",
        7 * 24 * 60 * 60 * 1000,
        "Longest life of a token; renewals cannot take it further. Default 7 days.",
    ),
    (
        "delegation.token.expiry.time.ms",
        "int",
        24 * 60 * 60 * 1000,
        "Validity of a token before it needs to be renewed. Default 1 day.",
    ),
    (
        "delegation.token.expiry.check.interval.ms",
        "int",
        60 * 60 * 1000,
        "Scan interval to remove expired delegation tokens.",
    ),
)

#: Configs whose values are never shown (DescribeConfigs, the start-up log).
SENSITIVE_CONFIGS: Final[frozenset[str]] = frozenset(
    {
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.keystore.key",
        "ssl.truststore.password",
        "delegation.token.secret.key",
    }
)

#: Configs a ``listener.name.<listener>.`` prefix may override.
LISTENER_OVERRIDABLE: Final[frozenset[str]] = frozenset(
    {str(d[0]) for d in SECURITY_CONFIGS if str(d[0]).startswith(("ssl.", "sasl."))}
)

LISTENER_PREFIX: Final = "listener.name."

#: Configs Kafka reads per listener and SASL mechanism as well
#: (``listener.name.<listener>.<mechanism>.<config>``, e.g.
#: ``listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms``).
MECHANISM_OVERRIDABLE: Final[frozenset[str]] = frozenset(
    {
        "connections.max.reauth.ms",
        "sasl.server.callback.handler.class",
        *(str(d[0]) for d in SECURITY_CONFIGS if str(d[0]).startswith("sasl.oauthbearer.")),
    }
)


def is_listener_override(key: str) -> bool:
    """Whether ``key`` is a ``listener.name.<listener>.<config>`` override we accept."""
    if not key.startswith(LISTENER_PREFIX):
        return False
    _listener, sep, rest = key[len(LISTENER_PREFIX) :].partition(".")
    if not sep or not _listener:
        return False
    return (
        rest in LISTENER_OVERRIDABLE
        or rest in ("max.connections", "max.connection.creation.rate", "connections.max.reauth.ms")
        or rest.endswith(".sasl.jaas.config")
        or rest.partition(".")[2] in MECHANISM_OVERRIDABLE
    )


def is_sensitive(key: str) -> bool:
    if key.endswith("sasl.jaas.config"):
        return True
    if key.startswith(LISTENER_PREFIX):
        key = key[len(LISTENER_PREFIX) :].partition(".")[2]
    return key in SENSITIVE_CONFIGS
