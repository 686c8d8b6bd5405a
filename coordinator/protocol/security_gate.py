"""The security gate between the Kafka-protocol server and the API handlers.

Each connection has a ``Session``: the listener it came in on, the client's
host and, once known, its principal (``User:ANONYMOUS`` on PLAINTEXT, the
certificate's DN on SSL with a client certificate, the SASL user on SASL
listeners).  On a SASL listener only ApiVersions, SaslHandshake (v1) and
SaslAuthenticate are served until the client has authenticated (KIP-152);
anything else closes the connection, as Kafka does.  A failed
authentication is answered SASL_AUTHENTICATION_FAILED, logged without the
password, and the connection is closed.  Every other request goes through
``api_rules`` when an authorizer is configured.
"""

from __future__ import annotations

import logging
import os
import ssl
import time
from collections.abc import Callable
from typing import Any, Final

from coordinator.protocol.acl_handlers import AdminHandler, SecurityAdminHandlers
from coordinator.protocol.acl_messages import SaslAuthenticateResponse, SaslHandshakeResponse
from coordinator.protocol.acl_rule_table import authorize_request
from coordinator.protocol.acl_rules import RequestContext, TopicDirectory
from coordinator.protocol.admin_request_views import (
    SaslAuthenticateRequestView,
    SaslHandshakeRequestView,
)
from coordinator.protocol.authorized_operations import APIS as OPERATION_APIS
from coordinator.protocol.authorized_operations import with_authorized_operations
from coordinator.protocol.responses import Body, Handler
from coordinator.protocol.session import Session
from coordinator.protocol.token_handlers import DelegationTokenHandlers
from coordinator.protocol.wire import DecodedRequest
from coordinator.security.acls import Authorizer, parse_principals
from coordinator.security.kerberos import (
    GSSAPI,
    GssapiAcceptor,
    GssapiServer,
    ServerIdentity,
    jaas_options,
    server_identity,
)
from coordinator.security.kerberos_names import (
    KerberosNameError,
    KerberosShortNamer,
    default_realm,
    split_rules,
)
from coordinator.security.listeners import Listener
from coordinator.security.oauthbearer import (
    OAUTHBEARER,
    SECURED_HANDLER,
    SECURED_HANDLER_OLD,
    UNSECURED_HANDLER,
    TokenValidator,
    UnsecuredValidator,
    secured_validator,
)
from coordinator.security.reauth import (
    MIN_REAUTH_INTERVAL_MS,
    mechanism_change_message,
    principal_change_message,
    session_lifetime_ms,
)
from coordinator.security.sasl import (
    PLAIN,
    SUPPORTED_MECHANISMS,
    new_server,
    parse_jaas,
    plain_users,
)
from coordinator.security.scram import (
    SaslAuthenticationFailedError,
    ScramCredential,
    ScramMechanism,
)
from coordinator.security.store import SecurityMetadata
from coordinator.security.tls import ANONYMOUS, principal_of
from coordinator.security.token_store import DelegationTokenStore
from coordinator.security.tokens import principal_name
from txn.api_keys import ApiKey
from txn.config import BrokerConfig
from txn.errors import ErrorCode, InvalidConfigError

log = logging.getLogger("sharetxn.security")


#: Kafka's accepted ``authorizer.class.name`` values (both mean the ACL authorizer here).
AUTHORIZER_CLASSES: Final = frozenset(
    {
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "kafka.security.authorizer.AclAuthorizer",
    }
)

#: ``Session.extra`` key: the principal could not be built (GSSAPI rules); close at once.
PRINCIPAL_ERROR: Final = "principal_error"

#: ``handle`` returns a response body, None (no response: acks=0) or CLOSE.
CLOSE: Final = False


class SecurityGate:
    """Authentication state per connection and authorization of every request."""

    def __init__(
        self,
        config: BrokerConfig,
        metadata: SecurityMetadata,
        topics: TopicDirectory | None = None,
    ) -> None:
        self.config = config
        self.metadata = metadata
        self.topics = topics
        self.authorizer: Authorizer | None = None
        name = config.get_str("authorizer.class.name").strip()
        if name:
            if name not in AUTHORIZER_CLASSES:
                allowed = " or ".join(sorted(AUTHORIZER_CLASSES))
                msg = f"authorizer.class.name {name!r} is not supported (use {allowed})"
                raise InvalidConfigError(msg)
            self.authorizer = Authorizer(
                metadata.acls,
                super_users=parse_principals(config["super.users"]),
                allow_if_no_acl=config.get_bool("allow.everyone.if.no.acl.found"),
                persist=metadata.save_acls,
            )
        self.admin = SecurityAdminHandlers(metadata, lambda: self.authorizer)
        # The broker's delegation tokens (set with the broker core: KafkaServer).
        self.tokens: DelegationTokenStore | None = None
        tokens = DelegationTokenHandlers(lambda: self.tokens, lambda: self.authorizer)
        self.table: dict[int, AdminHandler] = {**self.admin.table, **tokens.table}
        #: The broker's clock (``KafkaServer`` gives it its core's): token expiry, KIP-368.
        self.now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000
        self._oauth_validators: dict[str, TokenValidator] = {}
        self._kerberos: dict[str, tuple[ServerIdentity, KerberosShortNamer]] = {}

    # -- configuration --------------------------------------------------------------------------

    def enabled_mechanisms(self, listener: Listener) -> list[str]:
        text = self.config.get_listener_str(listener.name, "sasl.enabled.mechanisms") or ""
        return [m.strip().upper() for m in text.split(",") if m.strip()]

    def check_listener(self, listener: Listener) -> None:
        """Refuse at start a SASL listener without a mechanism this broker serves."""
        if not listener.protocol.uses_sasl:
            return
        enabled = self.enabled_mechanisms(listener)
        unsupported = [m for m in enabled if m not in SUPPORTED_MECHANISMS]
        if unsupported or not enabled:
            msg = (
                f"listener {listener.name}: sasl.enabled.mechanisms={','.join(enabled)} is not "
                f"served; choose among {', '.join(SUPPORTED_MECHANISMS)}"
            )
            raise InvalidConfigError(msg)
        for mechanism, module in (
            (PLAIN, "PlainLoginModule"),
            (OAUTHBEARER, "OAuthBearerLoginModule"),
        ):
            if mechanism in enabled and not self._jaas(listener, mechanism):
                # Kafka's JaasContext refuses to start the listener with this message (no JAAS
                # file is ever read here: the per-listener config is the only source).
                context = f"{listener.name.lower()}.KafkaServer"
                key = f"listener.name.{listener.name.lower()}.{mechanism.lower()}.sasl.jaas.config"
                msg = (
                    f"Could not find a 'KafkaServer' or '{context}' entry in the JAAS "
                    "configuration. System property 'java.security.auth.login.config' is not "
                    f"set (set {key} to a {module} line)"
                )
                raise InvalidConfigError(msg)
        if OAUTHBEARER in enabled:
            self._oauth_validators[listener.name] = self._oauth_validator(listener)
        if GSSAPI in enabled:
            self._kerberos[listener.name] = self._kerberos_of(listener)

    def _kerberos_of(self, listener: Listener) -> tuple[ServerIdentity, KerberosShortNamer]:
        """The listener's GSSAPI identity (JAAS Krb5LoginModule) and principal rules."""
        jaas = self._jaas(listener, GSSAPI)
        identity = server_identity(
            jaas,
            jaas_options(jaas),
            self.mechanism_config(listener, GSSAPI, "sasl.kerberos.service.name"),
            f"{listener.name.lower()}.KafkaServer",
        )
        rules = split_rules(
            self.mechanism_config(listener, GSSAPI, "sasl.kerberos.principal.to.local.rules")
        )
        try:
            namer = KerberosShortNamer(default_realm(os.environ.get("KRB5_CONFIG")), rules)
        except KerberosNameError as exc:
            msg = f"sasl.kerberos.principal.to.local.rules: {exc}"
            raise InvalidConfigError(msg) from None
        return identity, namer

    def _gssapi_server(self, listener: Listener) -> GssapiServer:
        found = self._kerberos.get(listener.name)
        if found is None:
            found = self._kerberos[listener.name] = self._kerberos_of(listener)
        identity, namer = found
        return GssapiServer(GssapiAcceptor(identity), namer)

    def _jaas(self, listener: Listener, mechanism: str) -> str | None:
        return self.config.get_listener_str(
            listener.name, f"{mechanism.lower()}.sasl.jaas.config"
        ) or self.config.get_listener_str(listener.name, "sasl.jaas.config")

    def mechanism_config(self, listener: Listener, mechanism: str, key: str) -> str | None:
        """``listener.name.<l>.<mechanism>.<key>``, else ``listener.name.<l>.<key>``, else
        ``key`` (Kafka's prefixes for the configs of one listener's SASL mechanism)."""
        prefixed = self.config.get_listener_str(listener.name, f"{mechanism.lower()}.{key}")
        if prefixed is not None:
            return prefixed
        return self.config.get_listener_str(listener.name, key)

    def _oauth_validator(self, listener: Listener) -> TokenValidator:
        handler = (
            self.mechanism_config(listener, OAUTHBEARER, "sasl.server.callback.handler.class") or ""
        ).strip()
        if handler in ("", UNSECURED_HANDLER):
            _module, options = parse_jaas(self._jaas(listener, OAUTHBEARER) or "")
            return UnsecuredValidator(options)
        if handler in (SECURED_HANDLER, SECURED_HANDLER_OLD):
            return secured_validator(lambda key: self.mechanism_config(listener, OAUTHBEARER, key))
        msg = (
            f"listener {listener.name}: sasl.server.callback.handler.class {handler!r} is not "
            f"served for OAUTHBEARER (leave it unset for the unsecured validator, or use "
            f"{SECURED_HANDLER})"
        )
        raise InvalidConfigError(msg)

    def _validator_of(self, listener: Listener) -> TokenValidator:
        validator = self._oauth_validators.get(listener.name)
        if validator is None:
            validator = self._oauth_validators[listener.name] = self._oauth_validator(listener)
        return validator

    def max_reauth_ms(self, listener: Listener, mechanism: str) -> int:
        text = self.mechanism_config(listener, mechanism, "connections.max.reauth.ms")
        try:
            return int(text) if text else 0
        except ValueError:
            return 0

    def _plain_users(self, listener: Listener) -> dict[str, str]:
        jaas = self.config.get_listener_str(listener.name, "plain.sasl.jaas.config")
        return plain_users(jaas)

    def _scram_lookup(self, mechanism: ScramMechanism, user: str) -> Any:
        return self.metadata.scram_credential(mechanism, user)

    def _token_lookup(
        self, mechanism: ScramMechanism, token_id: str
    ) -> tuple[ScramCredential, str, int] | None:
        """A delegation token's SCRAM credential, its owner's name and its expiry (Kafka's
        DelegationTokenCache: a token authenticates until it is removed; the session it
        opens ends at the token's expiry, KIP-368)."""
        if self.tokens is None:
            return None
        credential = self.tokens.tokens.credential(mechanism, token_id)
        token = self.tokens.tokens.tokens.get(token_id)
        if credential is None or token is None:
            return None
        return credential, principal_name(token.owner), token.expiry_ms

    # -- connections ----------------------------------------------------------------------------

    def open_session(
        self, listener: Listener, client_host: str, ssl_object: ssl.SSLObject | None
    ) -> Session:
        principal = principal_of(ssl_object) if listener.protocol.uses_tls else ANONYMOUS
        if listener.protocol.uses_sasl:
            principal = ANONYMOUS
        return Session(
            listener,
            client_host,
            principal=principal,
            authenticated=not listener.protocol.uses_sasl,
        )

    def before_authentication(self, session: Session, key: int) -> ErrorCode | bool | None:
        """What an unauthenticated SASL connection's request ``key`` gets, from its header alone.

        None: decode and serve it; CLOSE; or an error to answer before closing.  As Kafka's
        SaslServerAuthenticator: before SaslHandshake only ApiVersions and SaslHandshake
        (anything else closes the connection unanswered); after it only SaslAuthenticate
        (anything else is answered ILLEGAL_SASL_STATE, then the connection is closed).
        """
        if session.authenticated:
            return None
        if session.sasl is None:
            if key in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE):
                return None
            _log_refused(session, key, "before")
            return CLOSE
        if key == ApiKey.SASL_AUTHENTICATE:
            return None
        _log_refused(session, key, "during")
        return ErrorCode.ILLEGAL_SASL_STATE

    def after_authentication(self, session: Session, key: int) -> bool | None:
        """KIP-368 on an authenticated SASL connection whose session ends (``expiry_ms``).

        As Kafka's SocketServer: a SaslHandshake begins re-authentication (unless one began
        less than a second ago); any other request after the session's end closes the
        connection unanswered (CLOSE); None: serve it.
        """
        now = self.now_ms()
        principal_error = session.extra.get(PRINCIPAL_ERROR)
        if principal_error is not None:
            # Kafka's SocketServer: the principal is built at the first request and fails.
            log.error(
                "Closing socket for %s on %s because of error: %s",
                session.client_host,
                session.listener.name,
                principal_error,
            )
            return CLOSE
        if key == ApiKey.SASL_HANDSHAKE and (
            session.reauth_started_ms is None
            or now - session.reauth_started_ms >= MIN_REAUTH_INTERVAL_MS
        ):
            session.reauth_started_ms = now
            session.reauth_from = session.principal
            session.authenticated = False
            session.sasl = None
            return None
        if session.expiry_ms is not None and now > session.expiry_ms:
            log.info(
                "closing connection from %s on %s: its SASL session ended %d ms ago (KIP-368:"
                " the client did not re-authenticate in time)",
                session.client_host,
                session.listener.name,
                now - session.expiry_ms,
            )
            return CLOSE
        return None

    async def handle(
        self, session: Session, req: DecodedRequest[Any], handler: Handler | None
    ) -> Body | bool | None:
        key = req.api_key
        if key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(session, req)
        if key == ApiKey.SASL_AUTHENTICATE:
            return self._authenticate(session, req)
        if not session.authenticated and key != ApiKey.API_VERSIONS:
            _log_refused(session, key, "before")
            return CLOSE
        own = self.table.get(key)
        if own is not None:
            return await own(session, req)
        if handler is None:
            return CLOSE
        if self.authorizer is None or key == ApiKey.API_VERSIONS:
            body = await handler(req)
        else:
            ctx = RequestContext(self.authorizer, session.principal, session.client_host)
            if self.topics is not None:
                ctx = RequestContext(ctx.authorizer, ctx.principal, ctx.host, self.topics)
            body = await authorize_request(ctx, req, handler)
        if key in OPERATION_APIS and body is not None:
            body = with_authorized_operations(
                req, body, self.authorizer, session.principal, session.client_host
            )
        return body

    def _handshake(
        self, session: Session, req: DecodedRequest[SaslHandshakeRequestView]
    ) -> SaslHandshakeResponse:
        enabled = tuple(self.enabled_mechanisms(session.listener))
        if session.authenticated:
            # Kafka's KafkaApis (not a re-authentication): refused, the connection kept.
            return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=())
        if not session.listener.protocol.uses_sasl or session.sasl is not None:
            session.close_after_response = True
            return SaslHandshakeResponse(
                error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=enabled
            )
        mechanism = str(req.body.mechanism).upper()
        if mechanism not in enabled or mechanism not in SUPPORTED_MECHANISMS:
            log.info(
                "closing connection from %s: SASL mechanism %s is not enabled",
                session.client_host,
                mechanism,
            )
            session.close_after_response = True
            return SaslHandshakeResponse(
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled
            )
        listener = session.listener
        if session.reauth_from is not None and mechanism != session.mechanism:
            # Kafka answers the handshake, then closes at the SaslAuthenticate that follows.
            session.reauth_refusal = mechanism_change_message(mechanism, str(session.mechanism))
            log.debug(session.reauth_refusal)
        session.mechanism = mechanism
        session.sasl = new_server(
            mechanism,
            lambda: self._plain_users(listener),
            self._scram_lookup,
            self._token_lookup,
            (lambda: self._validator_of(listener), self.now_ms),
            lambda: self._gssapi_server(listener),
        )
        return SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=enabled)

    def _authenticate(
        self, session: Session, req: DecodedRequest[SaslAuthenticateRequestView]
    ) -> SaslAuthenticateResponse | bool:
        server = session.sasl
        if session.reauth_refusal is not None:
            log.info(
                "Failed re-authentication with %s on listener %s: %s",
                session.client_host,
                session.listener.name,
                session.reauth_refusal,
            )
            return CLOSE
        if session.authenticated:
            # Kafka's KafkaApis: refused, the connection kept.
            return SaslAuthenticateResponse(
                error_code=ErrorCode.ILLEGAL_SASL_STATE,
                error_message="SaslAuthenticate request received after successful authentication",
                auth_bytes=b"",
            )
        if server is None:
            session.close_after_response = True
            return SaslAuthenticateResponse(
                error_code=ErrorCode.ILLEGAL_SASL_STATE,
                error_message="Unexpected SaslAuthenticate request: no SASL exchange under way",
                auth_bytes=b"",
            )
        reauthenticating = session.reauth_from is not None
        try:
            token = server.evaluate(bytes(req.body.auth_bytes))
            if (
                server.complete
                and session.reauth_from is not None
                and server.principal != session.reauth_from
            ):
                msg = principal_change_message(session.reauth_from, server.principal)
                raise SaslAuthenticationFailedError(msg)
        except SaslAuthenticationFailedError as exc:
            message = str(exc)
            if reauthenticating:
                message = message.replace("during authentication", "during re-authentication")
            log.info(
                "Failed %s with %s on listener %s (mechanism %s): %s",
                "re-authentication" if reauthenticating else "authentication",
                session.client_host,
                session.listener.name,
                session.mechanism,
                message,
            )
            session.close_after_response = True
            return SaslAuthenticateResponse(
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                error_message=message,
                auth_bytes=b"",
            )
        lifetime = 0
        if server.complete:
            session.principal = server.principal
            session.authenticated = True
            session.token_authenticated = bool(getattr(server, "token_authenticated", False))
            session.reauth_from = None
            assert session.mechanism is not None
            lifetime, session.expiry_ms = session_lifetime_ms(
                self.now_ms(),
                getattr(server, "credential_expiry_ms", None),
                self.max_reauth_ms(session.listener, session.mechanism),
            )
            principal_error = getattr(server, "principal_error", None)
            if principal_error is not None:
                session.extra[PRINCIPAL_ERROR] = principal_error
                session.expiry_ms = self.now_ms()  # checked at every request from now on
            log.debug(
                "%s %s from %s with %s (session lifetime %d ms)",
                session.principal,
                "re-authenticated" if reauthenticating else "authenticated",
                session.client_host,
                session.mechanism,
                lifetime,
            )
        return SaslAuthenticateResponse(
            error_code=ErrorCode.NONE,
            error_message="",  # Kafka: the schema default, not null
            auth_bytes=token,
            session_lifetime=lifetime,
        )


def _log_refused(session: Session, key: int, when: str) -> None:
    """The INFO line for a request refused ``when`` ("before"/"during") SASL authentication."""
    log.info(
        "closing connection from %s on %s: request %d %s SASL authentication",
        session.client_host,
        session.listener.name,
        key,
        when,
    )
