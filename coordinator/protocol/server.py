"""The Kafka-protocol server: asyncio sockets around ``BrokerCore``.

Each connection is served in order (Kafka clients rely on responses arriving
in request order).  A Produce waits for its fsync in the group commit
(``coordinator.log.group_commit``), which other connections' requests share.
A frame that cannot be decoded, an unknown API or version, or an oversized
frame closes the connection alone, as Kafka's SocketServer (an ApiVersions
request at a version not served is answered at v0, as KIP-511 specifies); no
other connection is disturbed.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import ipaddress
import logging
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

from coordinator.broker import BrokerCore
from coordinator.log.group_commit import GroupCommit
from coordinator.protocol.acl_rules import TopicDirectory
from coordinator.protocol.api_versions import SUPPORTED, is_supported
from coordinator.protocol.handlers import Handlers
from coordinator.protocol.quota_handlers import QuotaHandlers
from coordinator.protocol.security_gate import CLOSE, SecurityGate
from coordinator.protocol.session import Session
from coordinator.protocol.throttling import (
    Throttle,
    Throttler,
    throttled_fetch,
    with_throttle_time,
)
from coordinator.protocol.wire import (
    FrameError,
    decode_request,
    encode_response,
    peek_header,
    response_class,
)
from coordinator.quotas.connection_rate import ConnectionCreationRates
from coordinator.security.limits import (
    ConnectionIdle,
    ConnectionQuotas,
    FrameRefused,
    read_frame,
)
from coordinator.security.listener_changes import plan_listeners, tls_settings
from coordinator.security.listeners import (
    CURRENT_ENDPOINT,
    Listener,
    SecurityProtocol,
    advertised_endpoint,
)
from coordinator.security.store import MemorySecurityStorage, SecurityMetadata
from txn.api_keys import ApiKey
from txn.config import BrokerConfig
from txn.errors import ErrorCode, InvalidConfigError

log = logging.getLogger("sharetxn.server")

#: Milliseconds the current request spent long-polling (not handling time for its quota).
_WAITED_MS: contextvars.ContextVar[list[float]] = contextvars.ContextVar("waited_ms")

#: The listen backlog (asyncio's default): where clients wait while max.connections is reached.
BACKLOG = 100


def _client_host(address: object) -> str:
    """The client's address as text; an IPv4 client of a dual-stack socket as IPv4."""
    if not isinstance(address, tuple) or not address:
        return ""
    text = str(address[0])
    with contextlib.suppress(ValueError):
        ip = ipaddress.ip_address(text)
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
    return text


def _listening_socket(host: str, port: int) -> socket.socket:
    """A non-blocking listening socket on ``host`` (empty: every address, IPv4 and IPv6)."""
    if not host:
        if socket.has_dualstack_ipv6():
            sock = socket.create_server(
                ("", port), family=socket.AF_INET6, backlog=BACKLOG, dualstack_ipv6=True
            )
        else:
            sock = socket.create_server(("", port), backlog=BACKLOG)
    else:
        family, _type, _proto, _name, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.create_server(address, family=family, backlog=BACKLOG)
    sock.setblocking(False)
    return sock


class KafkaServer:
    """Serves one ``BrokerCore`` on its listeners (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)."""

    def __init__(
        self,
        core: BrokerCore,
        host: str,
        port: int,
        *,
        listeners: list[Listener] | None = None,
        gate: SecurityGate | None = None,
        ssl_contexts: dict[str, ssl.SSLContext] | None = None,
    ) -> None:
        self.core = core
        self.host = host
        self.port = port
        self.listeners = listeners or [
            Listener("PLAINTEXT", host, port, SecurityProtocol.PLAINTEXT)
        ]
        self.gate = gate or SecurityGate(core.config, SecurityMetadata(MemorySecurityStorage()))
        self.gate.now_ms = core.clock.now_ms
        self.gate.topics = TopicDirectory(
            name_of=lambda topic_id: getattr(core.topics.by_id(topic_id), "name", None),
            exists=core.topic_exists,
            auto_create=lambda: core.config.get_bool("auto.create.topics.enable"),
        )
        self.gate.tokens = core.tokens
        self._ssl_contexts = dict(ssl_contexts or {})
        #: listener name -> (bound host, bound port) and the advertised (host, port)
        self.bound: dict[str, tuple[str, int]] = {}
        self.advertised: dict[str, tuple[str, int]] = {}
        self._sockets: dict[str, socket.socket] = {}
        self._acceptors: dict[str, asyncio.Task[None]] = {}
        #: the settings the listeners are bound with, and the --listen address (no `listeners`)
        self._listen = (host, port)
        self._config = self.gate.config
        #: what each TLS listener's SSL context was made from (listener_changes.tls_settings)
        self._tls_loaded = {
            x.name: tls_settings(self._config, x) for x in self.listeners if x.protocol.uses_tls
        }
        self._started = False
        self._listener_of: dict[asyncio.Task[None], str] = {}
        self._slot_waiter: asyncio.Future[None] | None = None
        self._append_waiters: list[Callable[[], None]] = []
        self._connections: set[asyncio.Task[None]] = set()
        self._next_connection_id = 0
        self.max_request_bytes = core.config.get_int("socket.request.max.bytes")
        self.max_sasl_receive_bytes = core.config.get_int("sasl.server.max.receive.size")
        self.quotas = ConnectionQuotas.from_config(core.config, (x.name for x in self.listeners))
        core.dynamic.on_change(self.quotas.reconfigure)  # max.connections* at run time
        core.dynamic.on_change(self.reconfigure)  # listeners, TLS and SASL at run time
        # max.connection.creation.rate, broker-wide and per listener (coordinator.quotas).
        names = [x.name for x in self.listeners]
        self.connection_rates = ConnectionCreationRates.from_config(core.config, names)
        core.dynamic.on_change(
            lambda c: self.connection_rates.configure(c, [x.name for x in self.listeners])
        )
        idle_ms = core.config.get_int("connections.max.idle.ms")
        self.idle_timeout_s = None if idle_ms < 0 else idle_ms / 1000
        # Called after every answered request: (API name, milliseconds, bytes in, bytes out).
        self.request_observer: Callable[[str, float, int, int], None] | None = None
        core.add_append_listener(self._on_append)
        self._handling = 0  # requests being handled, over every connection
        self.group_commit = GroupCommit(others_waiting=lambda waiters: self._handling > waiters)
        self.handlers = Handlers(core, host, port, self._wait_for_append, self.group_commit)
        # Client quotas (coordinator.quotas): their APIs, and the mutes they ask for.
        gate_table = self.gate.table
        gate_table.update(QuotaHandlers(core.client_quotas, lambda: self.gate.authorizer).table)
        self.throttler = Throttler(core.client_quotas)
        self._throttles: dict[int, Throttle] = {}

    def _on_append(self, _tp: object) -> None:
        waiters, self._append_waiters = self._append_waiters, []
        for wake in waiters:
            wake()

    async def _wait_for_append(self, deadline_ms: int) -> None:
        """Until the next log append, or ``deadline_ms`` on the broker's Clock (long polls)."""
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not woken.done():
                woken.set_result(None)

        clock = self.core.clock
        self._append_waiters.append(wake)
        timer = clock.schedule(max(0, deadline_ms - clock.now_ms()), wake)
        started = time.perf_counter()
        try:
            await woken
        finally:
            timer.cancel()
            waited = _WAITED_MS.get(None)
            if waited is not None:
                waited[0] += (time.perf_counter() - started) * 1000

    async def _mute(self, throttle_ms: int) -> None:
        """Read nothing more from the connection for ``throttle_ms`` on the broker's Clock
        (KIP-219: the quota managers decided it)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not done.done():
                done.set_result(None)

        timer = self.core.clock.schedule(throttle_ms, wake)
        try:
            await done
        finally:
            timer.cancel()

    async def start(self) -> None:
        for listener in self.listeners:
            self._bind(listener)
        self._started = True
        self._set_first_address()
        # Dynamic listener configs recorded before this start (replayed with the metadata log).
        self.reconfigure(self.core.config)

    def _bind(self, listener: Listener) -> None:
        sock = _listening_socket(listener.host, listener.port)
        port = int(sock.getsockname()[1])
        self._sockets[listener.name] = sock
        self.bound[listener.name] = (listener.host, port)
        self.advertised[listener.name] = advertised_endpoint(listener, port)
        self._acceptors[listener.name] = asyncio.create_task(self._accept_loop(listener, sock))

    def _set_first_address(self) -> None:
        first = self.listeners[0]
        self.host, self.port = self.advertised[first.name]
        self.handlers.set_address(self.host, self.port)

    def reconfigure(self, config: BrokerConfig) -> None:
        """Apply new effective settings to the listeners (``listener_changes.plan_listeners``):
        bind the added ones, close the removed ones with their connections, take new SSL
        contexts for new connections; SASL mechanisms and users are read at each handshake."""
        if not self._started:
            return
        try:
            plan = plan_listeners(self.listeners, self._tls_loaded, config, self._listen)
        except InvalidConfigError as exc:
            log.error("listener configs not applied (the listeners are kept): %s", exc)
            return
        self.gate.config = config
        self._config = config
        self._ssl_contexts.update(plan.contexts)
        self._tls_loaded.update(plan.loaded)
        for name in plan.contexts:
            log.info("listener %s: new TLS settings, used for new connections", name)
        for listener in plan.removed:
            self._close_listener(listener)
        for listener in plan.added:
            try:
                self.gate.check_listener(listener)
                self._bind(listener)
            except (OSError, InvalidConfigError) as exc:
                log.error("listener %s not bound: %s", listener.name, exc)
                continue
            self.listeners.append(listener)
            bound_host, bound_port = self.bound[listener.name]
            log.info(
                "listener %s (%s) added on %s:%d",
                listener.name,
                listener.protocol.value,
                bound_host,
                bound_port,
            )
        if self.listeners:
            self._set_first_address()
        try:  # listener.name.<listener>.max.connections of the listeners now bound
            names = [x.name for x in self.listeners]
            self.quotas.listener_max = ConnectionQuotas.from_config(config, names).listener_max
        except InvalidConfigError as exc:
            log.error("listener connection limits not applied: %s", exc)

    def _close_listener(self, listener: Listener) -> None:
        """Stop accepting on ``listener`` and close its connections (Kafka's removeListeners)."""
        acceptor = self._acceptors.pop(listener.name, None)
        if acceptor is not None:
            acceptor.cancel()
        sock = self._sockets.pop(listener.name, None)
        if sock is not None:
            sock.close()
        for task, name in list(self._listener_of.items()):
            if name == listener.name:
                task.cancel()
        self.bound.pop(listener.name, None)
        self.advertised.pop(listener.name, None)
        self._ssl_contexts.pop(listener.name, None)
        self._tls_loaded.pop(listener.name, None)
        self.listeners = [x for x in self.listeners if x.name != listener.name]
        log.info("listener %s removed", listener.name)

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def stop(self) -> None:
        self._started = False
        acceptors = list(self._acceptors.values())
        for acceptor in acceptors:
            acceptor.cancel()
        for acceptor in acceptors:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await acceptor
        for sock in self._sockets.values():
            sock.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _slot_freed(self) -> None:
        if self._slot_waiter is None or self._slot_waiter.done():
            self._slot_waiter = asyncio.get_running_loop().create_future()
        await self._slot_waiter

    def _release(self, host: str, listener: str) -> None:
        self.quotas.release(host, listener)
        if self._slot_waiter is not None and not self._slot_waiter.done():
            self._slot_waiter.set_result(None)

    async def _accept_loop(self, listener: Listener, sock: socket.socket) -> None:
        """Kafka's Acceptor: accept, wait for a connection slot, count the connection.

        While ``max.connections`` (or the listener's own limit) is reached, nothing more is
        accepted: the clients wait in the kernel's listen backlog, as on Kafka.  A TLS
        connection gets the listener's SSL context of the moment it is accepted.
        """
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, address = await loop.sock_accept(sock)
            except OSError as exc:  # e.g. EMFILE: try again shortly rather than spin
                log.warning("listener %s: accept failed: %s", listener.name, exc)
                await asyncio.sleep(0.1)
                continue
            host = _client_host(address)
            try:
                # As Kafka's acceptor: over the broker's or the listener's connection creation
                # rate, wait before taking this connection (the next ones wait in the backlog).
                wait_ms = self.connection_rates.record(listener.name, self.core.clock.now_ms())
                if wait_ms > 0:
                    await asyncio.sleep(wait_ms / 1000)
                while not self.quotas.slot_available(listener.name):
                    await self._slot_freed()
            except asyncio.CancelledError:
                conn.close()  # the broker stops while this one waits for a slot
                raise
            hold_ms = self.core.client_quotas.accept_connection(host)
            if hold_ms > 0:
                # As Kafka's ConnectionQuotas (KIP-612): over its IP's connection_creation_rate,
                # the connection is held unread for the throttle time, then closed.
                log.debug("connection from %s throttled for %d ms", host, hold_ms)
                self.core.clock.schedule(hold_ms, conn.close)
                continue
            refused = self.quotas.acquire(host, listener.name)
            if refused is not None:
                # As Kafka's ConnectionQuotas: closed at once, nothing read or answered.
                log.warning("Rejected connection from %s, %s", host, refused)
                conn.close()
                continue
            context = self._ssl_contexts.get(listener.name) if listener.protocol.uses_tls else None
            task = asyncio.create_task(self._open(listener, conn, host, context))
            self._connections.add(task)
            self._listener_of[task] = listener.name

    async def _open(
        self,
        listener: Listener,
        conn: socket.socket,
        host: str,
        context: ssl.SSLContext | None,
    ) -> None:
        """Streams over an accepted socket (after its TLS handshake), then serve them."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        try:
            reader = asyncio.StreamReader(limit=1 << 20)
            protocol = asyncio.StreamReaderProtocol(reader)
            transport, _ = await loop.connect_accepted_socket(lambda: protocol, conn, ssl=context)
        except BaseException as exc:
            log.debug("connection from %s on %s not opened: %r", host, listener.name, exc)
            conn.close()
            if task is not None:
                self._connections.discard(task)
                self._listener_of.pop(task, None)
            self._release(host, listener.name)
            if isinstance(exc, OSError | ssl.SSLError | TimeoutError):
                return  # the client went away or its TLS handshake failed
            raise
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        await self._serve_listener(listener, reader, writer, host)

    async def _serve_listener(
        self,
        listener: Listener,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        host: str,
    ) -> None:
        CURRENT_ENDPOINT.set(self.advertised.get(listener.name))
        session = self.gate.open_session(listener, host, writer.get_extra_info("ssl_object"))
        await self._serve(reader, writer, session, listener.name)

    async def _serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        session: Session,
        listener_name: str,
    ) -> None:
        """Serve a connection counted by the acceptor, until it closes; then free its slot."""
        task = asyncio.current_task()
        assert task is not None
        peer = writer.get_extra_info("peername")
        host = session.client_host
        self._connections.add(task)
        self._next_connection_id += 1
        connection_id = self._next_connection_id
        log.debug("connection %d from %s opened", connection_id, peer)
        try:
            await self._connection_loop(reader, writer, connection_id, host, session)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("connection failed")
        finally:
            log.debug("connection %d from %s closed", connection_id, peer)
            self._connections.discard(task)
            self._listener_of.pop(task, None)
            self._release(host, listener_name)
            # Share sessions live as long as their connection (Kafka releases their records).
            self.core.share.on_connection_closed(connection_id)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _connection_loop(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        connection_id: int = 0,
        client_host: str = "",
        session: Session | None = None,
    ) -> None:
        if session is None:
            session = self.gate.open_session(self.listeners[0], client_host, None)
        while True:
            # Before SASL authentication only small frames (Kafka's SaslServerAuthenticator).
            limit, limit_name = (
                (self.max_request_bytes, "socket.request.max.bytes")
                if session.authenticated
                else (self.max_sasl_receive_bytes, "sasl.server.max.receive.size")
            )
            try:
                frame = await read_frame(reader, limit, self.idle_timeout_s, limit_name=limit_name)
            except ConnectionIdle:
                log.debug("connection %d idle for connections.max.idle.ms: closed", connection_id)
                return
            except FrameRefused as exc:
                # As Kafka (InvalidReceiveException): closed without reading the frame, so
                # one connection never buffers more than the limit.
                log.warning("closing connection %d from %s: %s", connection_id, client_host, exc)
                return
            size = len(frame)
            started = time.perf_counter()
            self._handling += 1
            try:
                response = await self._handle_frame(frame, connection_id, client_host, session)
            finally:
                self._handling -= 1
            if self.request_observer is not None:
                api = SUPPORTED.get(peek_header(frame)[0], ("unknown",))[0]
                out = len(response) if isinstance(response, bytes) else 0
                elapsed_ms = (time.perf_counter() - started) * 1000
                self.request_observer(api, elapsed_ms, size + 4, out)
            if response is False:
                return
            throttle = self._throttles.pop(connection_id, None)
            if isinstance(response, bytes):
                writer.write(response)
                await writer.drain()
            if throttle is not None:
                await self._mute(throttle.ms)
            if session.close_after_response:
                return  # e.g. after SASL_AUTHENTICATION_FAILED, as Kafka

    async def _handle_frame(
        self,
        frame: bytes,
        connection_id: int = 0,
        client_host: str = "",
        session: Session | None = None,
    ) -> bytes | bool | None:
        """The encoded response, None for no response (acks=0), False to close."""
        key, version, correlation_id = peek_header(frame)
        if session is None:
            session = self.gate.open_session(self.listeners[0], client_host, None)
        if (
            session.authenticated
            and session.expiry_ms is not None
            and self.gate.after_authentication(session, key) is CLOSE
        ):
            return False  # KIP-368: the SASL session ended (decided on the header alone)
        if not session.authenticated:
            # Checked on the header alone: no request body is decoded before authentication.
            verdict = self.gate.before_authentication(session, key)
            if verdict is CLOSE:
                return False
            if isinstance(verdict, ErrorCode):
                session.close_after_response = True
                return self._error_frame(key, version, correlation_id, verdict)
        if key == ApiKey.API_VERSIONS and not is_supported(key, version):
            # Clients retry ApiVersions at v0 after this answer, as KIP-511 specifies.
            return self._api_versions_v0(correlation_id, ErrorCode.UNSUPPORTED_VERSION)
        if not is_supported(key, version):
            # As Kafka's SocketServer (parseRequestHeader: "not enabled", an
            # InvalidRequestException): the connection is closed, nothing answered.
            name = SUPPORTED.get(key, (f"api {key}",))[0]
            log.info(
                "closing connection %d from %s: %s v%d is not enabled",
                connection_id,
                client_host,
                name,
                version,
            )
            return False
        try:
            request = dataclasses.replace(
                decode_request(frame), connection_id=connection_id, client_host=client_host
            )
        except FrameError as exc:
            # As Kafka (RequestContext.parseRequest's InvalidRequestException, before and after
            # authentication): a body that cannot be decoded closes the connection.
            log.info("closing connection %d from %s: %s", connection_id, client_host, exc)
            return False
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "connection %d: %s v%d (correlation id %d, %d bytes)",
                connection_id,
                SUPPORTED[key][0],
                version,
                correlation_id,
                len(frame),
            )
        if key in (ApiKey.FETCH, ApiKey.SHARE_FETCH):
            request = self.throttler.limit_fetch(session.principal, request)
        self.throttler.begin(key, version, session.principal, request.client_id)
        waited = [0.0]
        _WAITED_MS.set(waited)
        started = time.perf_counter()
        try:
            body = await self.gate.handle(session, request, self.handlers.table.get(key))
        except Exception:
            log.exception("handler for api %d v%d failed", key, version)
            return self._error_frame(key, version, correlation_id, ErrorCode.UNKNOWN_SERVER_ERROR)
        handler_ms = max(0.0, (time.perf_counter() - started) * 1000 - waited[0])
        if body is CLOSE:
            return False
        principal, client_id = session.principal, request.client_id
        if body is None or body is True:
            throttle = self.throttler.request(
                key, version, principal, client_id, len(frame), handler_ms, answered=False
            )
            if throttle.ms > 0:
                self._throttles[connection_id] = throttle
            return None
        try:
            encoded = encode_response(key, version, correlation_id, body)
            if key == ApiKey.FETCH:
                throttle = self.throttler.fetch(
                    version, principal, client_id, len(encoded), handler_ms
                )
            elif key == ApiKey.SHARE_FETCH:
                throttle = self.throttler.share_fetch(
                    version, principal, client_id, len(frame), handler_ms, body
                )
            else:
                throttle = self.throttler.request(
                    key, version, principal, client_id, len(frame), handler_ms, answered=True
                )
            if throttle.ms > 0:
                self._throttles[connection_id] = throttle
                body = (
                    throttled_fetch(throttle.ms)
                    if key == ApiKey.FETCH
                    else with_throttle_time(body, throttle.ms)
                )
                encoded = encode_response(key, version, correlation_id, body)
            return encoded
        except Exception:
            # A response that cannot be encoded (a field left None) is a broker bug: answered
            # like a failed handler, the connection kept where the response has an error code.
            log.exception("response to api %d v%d could not be encoded", key, version)
            return self._error_frame(key, version, correlation_id, ErrorCode.UNKNOWN_SERVER_ERROR)

    def _api_versions_v0(self, correlation_id: int, error: ErrorCode) -> bytes:
        keys = [
            {"api_key": k, "min_version": lo, "max_version": hi}
            for k, (_n, lo, hi) in sorted(SUPPORTED.items())
        ]
        return encode_response(
            ApiKey.API_VERSIONS, 0, correlation_id, {"error_code": error, "api_keys": keys}
        )

    def _error_frame(
        self, key: int, version: int, correlation_id: int, error: ErrorCode
    ) -> bytes | bool:
        """An error response if the schema has a top-level error code, else False (close)."""
        try:
            cls = response_class(key, version)
        except Exception:
            return False
        names = {f for f in getattr(cls, "__dataclass_fields__", {})}
        if "error_code" not in names:
            return False
        body: dict[str, Any] = {"error_code": error}
        try:
            return encode_response(key, version, correlation_id, body)
        except Exception:
            return False
