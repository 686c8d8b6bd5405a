"""Kafka Connect's REST API for the sink worker, on the standard library's HTTP server.

Endpoints and JSON shapes as Connect's ``RootResource``, ``ConnectorsResource`` and
``ConnectorPluginsResource``; an error is ``{"error_code": <HTTP status>, "message": ...}``.

=======  ================================================  ===============================
method   path                                              answer
=======  ================================================  ===============================
GET      ``/``                                             version, commit, cluster id
GET      ``/health``                                       healthy (200) or starting (503)
GET      ``/connectors[?expand=status&expand=info]``       names (or name -> expansions)
POST     ``/connectors``  ``{"name", "config"}``           201, the connector's info
GET      ``/connectors/{name}``                            info: name, config, tasks, type
GET/PUT  ``/connectors/{name}/config``                     config; PUT: 201 created, 200
PATCH    ``/connectors/{name}/config``                     200, the patched connector
GET      ``/connectors/{name}/status``                     connector and task states
GET      ``/connectors/{name}/tasks``                      ``[{"id", "config"}]``
GET      ``/connectors/{name}/offsets``                    the share group's start offsets
PATCH    ``/connectors/{name}/offsets``                    alter them (``producer.sink.offsets``)
DELETE   ``/connectors/{name}/offsets``                    reset them
GET      ``/connectors/{name}/topics``                     the active topics (KIP-558)
PUT      ``/connectors/{name}/topics/reset``               202, forgets them
POST     ``/connectors/{name}/restart``                    204; with ``includeTasks`` or
                                                           ``onlyFailed``: 202 and status
PUT      ``/connectors/{name}/pause|resume|stop``          202
GET      ``/connectors/{name}/tasks/{n}/status``           the task's state
POST     ``/connectors/{name}/tasks/{n}/restart``          204
DELETE   ``/connectors/{name}``                            204
GET      ``/connector-plugins``                            ``[{"class", "type", "version"}]``
PUT      ``/connector-plugins/{plugin}/config/validate``   Connect's ``ConfigInfos``
GET/PUT  ``/admin/loggers[/{name}]``                       levels (``producer.sink.loggers``)
=======  ================================================  ===============================

A request only the leader may serve (``NotLeader``) is forwarded to the leader's URL with
``?forward=false`` appended (``true`` on a first hop that came with no flag), as Connect's
``HerderRequestHandler``: two hops at most, then 409.

The listener: ``listeners`` (``http://HOST:PORT`` or ``https://``, see
``producer.sink.rest_tls``; Connect's key; ``http://:8083`` by default) or
``rest.port``; ``rest.advertised.host.name`` / ``rest.advertised.port`` name the URL other
workers forward to.  Port 0 picks a free port.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from producer.sink.connect_protocol import PAUSED, STARTED, STOPPED
from producer.sink.herder import (
    BadRequest,
    Herder,
    HerderError,
    NotFound,
    NotLeader,
    check_class,
    plugin_class,
    plugins,
    validate,
)
from producer.sink.loggers import CLUSTER_SCOPE, LEVELS, WORKER_SCOPE
from producer.sink.offsets import (
    alter_share_offsets,
    check_body,
    parse_sink_offsets,
    reset_share_offsets,
)
from producer.sink.rest_tls import client_context, https_context

__all__ = ["DEFAULT_PORT", "RestServer", "listener_of"]

log = logging.getLogger("producer.sink.rest")

DEFAULT_PORT: Final = 8083
_FORWARD_TIMEOUT_S: Final = 90.0
_JSON: Final = "application/json"

Reply = tuple[int, Any]


def listener_of(worker: Mapping[str, Any]) -> tuple[str, int]:
    """(host, port) from ``listeners`` (the first one) or ``rest.port``."""
    _, host, port = listener_url(worker)
    return host, port


def listener_url(worker: Mapping[str, Any]) -> tuple[str, str, int]:
    """(scheme, host, port) from ``listeners`` (the first one) or ``rest.port``."""
    listeners = str(worker.get("listeners") or "").strip()
    if listeners:
        first = listeners.split(",")[0].strip()
        parsed = urllib.parse.urlsplit(first)
        if parsed.scheme not in ("http", "https"):
            msg = f"listeners: only http:// and https:// listeners are served, not {first!r}"
            raise ValueError(msg)
        port = parsed.port if parsed.port is not None else DEFAULT_PORT
        return parsed.scheme, parsed.hostname or "", port
    port_text = str(worker.get("rest.port") or DEFAULT_PORT)
    if not port_text.isdigit():
        msg = f"rest.port: must be a port number, not {port_text!r}"
        raise ValueError(msg)
    return "http", str(worker.get("rest.host.name") or ""), int(port_text)


class RestServer:
    """Serves ``herder`` over HTTP from a daemon thread."""

    def __init__(self, worker: Mapping[str, Any]) -> None:
        scheme, host, port = listener_url(worker)
        self.herder: Herder | None = None
        self.worker = dict(worker)
        context = https_context(worker) if scheme == "https" else None
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        if context is not None:
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        bound = self._server.server_address[1]
        adv_host = str(worker.get("rest.advertised.host.name") or host or socket.gethostname())
        adv_port = int(worker.get("rest.advertised.port") or bound)
        self.url = f"{scheme}://{adv_host}:{adv_port}/"
        self.port = int(bound)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="sink-rest", daemon=True
        )

    def start(self, herder: Herder) -> None:
        self.herder = herder
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- dispatch --------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> Reply:
        herder = self.herder
        if herder is None:
            return 503, _error(503, "The worker is starting")
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/") if p]
        route = _route(herder, method, parts, query, body)
        if route is None and parts[:2] == ["admin", "loggers"]:
            route = _logger_route(herder, method, parts[2:], query, body)
        if route is None:
            known = _known_path(parts)
            code = 405 if known else 404
            text = "HTTP 405 Method Not Allowed" if known else "HTTP 404 Not Found"
            return code, _error(code, text)
        try:
            return route()
        except NotLeader as exc:
            return self._forward(exc, method, path, query, body)
        except HerderError as exc:
            return exc.status, _error(exc.status, exc.message)
        except Exception as exc:
            log.exception("REST %s %s", method, path)
            return 500, _error(500, f"{type(exc).__name__}: {exc}")

    def _forward(
        self, exc: NotLeader, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> Reply:
        flag = query["forward"][0] if query.get("forward") else None
        if flag is not None and flag.lower() != "true":
            message = (
                "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"
            )
            return 409, _error(409, message)
        if exc.leader_url is None:
            message = (
                "Cannot complete request momentarily due to no known leader URL, "
                "likely because a rebalance was underway."
            )
            return 409, _error(409, message)
        params = [("forward", "true" if flag is None else "false")]
        params += [(k, v) for k, vs in query.items() if k != "forward" for v in vs]
        url = exc.leader_url.rstrip("/") + path + "?" + urllib.parse.urlencode(params)
        data = None if body is None else json.dumps(body).encode()
        if not url.startswith(("http://", "https://")):
            return 500, _error(500, f"cannot forward to {exc.leader_url!r}")
        request = urllib.request.Request(url, data=data, method=method)  # noqa: S310
        request.add_header("Content-Type", _JSON)
        request.add_header("Accept", _JSON)
        context = client_context(self.worker) if url.startswith("https://") else None
        try:
            with urllib.request.urlopen(  # noqa: S310
                request, timeout=_FORWARD_TIMEOUT_S, context=context
            ) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            return error.code, json.loads(raw) if raw else None
        except OSError as error:
            message = f"IO Error trying to forward REST request: {error}"
            return 500, _error(500, message)


def _error(code: int, message: str) -> dict[str, Any]:
    return {"error_code": code, "message": message}


def _flag(query: dict[str, list[str]], key: str) -> bool:
    return (query.get(key) or ["false"])[0].lower() == "true"


def _config_body(body: Any) -> dict[str, str]:
    if not isinstance(body, dict):
        raise BadRequest("Request body must be a JSON object of connector configs")
    return {str(k): "" if v is None else str(v) for k, v in body.items()}


def _known_path(parts: list[str]) -> bool:
    if not parts:
        return True
    if parts[0] == "connectors":
        if len(parts) == 5 and parts[2] == "tasks" and parts[3].lstrip("-").isdigit():
            return parts[4] in ("status", "restart")
        if len(parts) == 4:
            return parts[2:] == ["topics", "reset"]
        return len(parts) <= 2 or (
            len(parts) == 3
            and parts[2]
            in (
                "config",
                "status",
                "tasks",
                "offsets",
                "topics",
                "restart",
                "pause",
                "resume",
                "stop",
            )
        )
    if parts[:2] == ["admin", "loggers"]:
        return len(parts) <= 3
    if parts == ["health"]:
        return True
    if parts[0] == "connector-plugins":
        return len(parts) == 1 or (len(parts) == 4 and parts[2:] == ["config", "validate"])
    return False


def _route(
    h: Herder, method: str, parts: list[str], query: dict[str, list[str]], body: Any
) -> Callable[[], Reply] | None:
    n = len(parts)
    if n == 0 and method == "GET":
        return lambda: (200, h.server_info())
    if parts == ["health"] and method == "GET":
        return lambda: _health(h)
    if parts[:1] == ["connector-plugins"]:
        if n == 1 and method == "GET":
            return lambda: (200, plugins())
        if n == 4 and parts[2:] == ["config", "validate"] and method == "PUT":
            return lambda: _validate(h, parts[1], body)
        return None
    if parts[:1] != ["connectors"]:
        return None
    if n == 1:
        if method == "GET":
            return lambda: (200, _list(h, query))
        if method == "POST":
            return lambda: _create(h, body)
        return None
    name = parts[1]
    if n == 2:
        if method == "GET":
            return lambda: (200, h.connector_info(name))
        if method == "DELETE":
            return lambda: _done(204, h.delete_connector, name)
        return None
    if n == 5 and parts[2] == "tasks" and parts[3].lstrip("-").isdigit():
        task = int(parts[3])
        if parts[4] == "status" and method == "GET":
            return lambda: (200, h.task_status(name, task))
        if parts[4] == "restart" and method == "POST":
            return lambda: _done(204, h.restart_task, name, task)
        return None
    if n == 4 and parts[2:] == ["topics", "reset"] and method == "PUT":
        return lambda: _done(202, h.reset_active_topics, name)
    if n != 3:
        return None
    table: dict[tuple[str, str], Callable[[], Reply]] = {
        ("config", "GET"): lambda: (200, h.connector_config(name)),
        ("config", "PUT"): lambda: _put_config(h, name, body),
        ("config", "PATCH"): lambda: (200, h.patch_connector_config(name, _patch_body(body))),
        ("topics", "GET"): lambda: (200, {name: {"topics": h.active_topics(name)}}),
        ("status", "GET"): lambda: (200, h.connector_status(name)),
        ("tasks", "GET"): lambda: (200, h.task_configs(name)),
        ("offsets", "GET"): lambda: (200, h.offsets(name)),
        ("offsets", "PATCH"): lambda: (200, _alter_offsets(h, name, body)),
        ("offsets", "DELETE"): lambda: (200, reset_share_offsets(*h.offsets_target(name))),
        ("restart", "POST"): lambda: _restart(h, name, query),
        ("pause", "PUT"): lambda: _done(202, h.set_target_state, name, PAUSED),
        ("resume", "PUT"): lambda: _done(202, h.set_target_state, name, STARTED),
        ("stop", "PUT"): lambda: _done(202, h.set_target_state, name, STOPPED),
    }
    return table.get((parts[2], method))


def _patch_body(body: Any) -> dict[str, str | None]:
    if not isinstance(body, dict):
        raise BadRequest("Request body must be a JSON object of connector configs")
    return {str(k): None if v is None else str(v) for k, v in body.items()}


def _alter_offsets(h: Herder, name: str, body: Any) -> dict[str, str]:
    """Connect's checks in its order: a body with offsets, then the connector's state."""
    entries = check_body(body)
    admin, connector, group = h.offsets_target(name)
    return alter_share_offsets(admin, connector, group, parse_sink_offsets(entries))


def _logger_route(
    h: Herder, method: str, rest: list[str], query: dict[str, list[str]], body: Any
) -> Callable[[], Reply] | None:
    """``/admin/loggers[/{name}]`` (see ``producer.sink.loggers``)."""
    if not rest and method == "GET":
        return lambda: (200, h.loggers.all_levels())
    if len(rest) != 1:
        return None
    name = rest[0]
    if method == "GET":
        return lambda: (200, _logger_level(h, name))
    if method == "PUT":
        return lambda: _set_logger(h, name, query, body)
    return None


def _logger_level(h: Herder, name: str) -> dict[str, Any]:
    found = h.loggers.level(name)
    if found is None:
        raise NotFound(f"Logger {name} not found.")
    return found


def _set_logger(h: Herder, name: str, query: dict[str, list[str]], body: Any) -> Reply:
    level = body.get("level") if isinstance(body, dict) else None
    if level is None:
        raise BadRequest("Desired 'level' parameter was not specified in request.")
    if str(level).upper() not in LEVELS:
        raise NotFound(f"invalid log level '{level}'.")
    scope = (query.get("scope") or [WORKER_SCOPE])[0].lower()
    if scope == CLUSTER_SCOPE:
        h.set_cluster_logger_level(name, str(level))
        return 204, None
    return 200, h.loggers.set_level(name, str(level))


def _health(h: Herder) -> Reply:
    """KIP-1017's ``GET /health``."""
    if h.ready():
        message = "Worker has completed startup and is ready to handle requests."
        return 200, {"status": "healthy", "message": message}
    return 503, {"status": "starting", "message": "Worker is still starting up."}


def _done(code: int, action: Callable[..., None], *args: str | int) -> Reply:
    action(*args)
    return code, None


def _list(h: Herder, query: dict[str, list[str]]) -> Any:
    expand = query.get("expand")
    if not expand:
        return h.connectors()
    out: dict[str, dict[str, Any]] = {}
    for name in h.connectors():
        entry: dict[str, Any] = {}
        try:
            if "status" in expand:
                entry["status"] = h.connector_status(name)
            if "info" in expand:
                entry["info"] = h.connector_info(name)
        except HerderError:
            continue
        out[name] = entry
    return out


def _create(h: Herder, body: Any) -> Reply:
    if not isinstance(body, dict):
        raise BadRequest("Request body must be a JSON object with name and config")
    name = str(body.get("name") or "").strip()
    config = _config_body(body.get("config") or {})
    _check_name(name, config)
    _, info = h.put_connector_config(name, config, allow_replace=False)
    return 201, info


def _put_config(h: Herder, name: str, body: Any) -> Reply:
    config = _config_body(body)
    _check_name(name, config)
    created, info = h.put_connector_config(name, config, allow_replace=True)
    return (201 if created else 200), info


def _check_name(name: str, config: dict[str, str]) -> None:
    included = config.get("name")
    if included is None:
        config["name"] = name
    elif included != name:
        raise BadRequest(
            f"Connector name configuration ({included}) doesn't match connector name in the "
            f"URL ({name})"
        )


def _restart(h: Herder, name: str, query: dict[str, list[str]]) -> Reply:
    include, only_failed = _flag(query, "includeTasks"), _flag(query, "onlyFailed")
    status = h.restart(name, include, only_failed)
    if status is None and not only_failed:
        return 204, None
    return 202, status if status is not None else h.connector_status(name)


def _validate(h: Herder, plugin: str, body: Any) -> Reply:
    config = _config_body(body)
    given = config.get("connector.class")
    if given is not None and given != plugin and plugin_class(given) != plugin_class(plugin):
        raise BadRequest(f"Included connector type {given} does not match request type {plugin}")
    check_class(config)
    return 200, validate(h.worker, config)


def _handler_for(server: RestServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s %s", self.address_string(), format % args)

        def _serve(self) -> None:
            split = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(split.query)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw.strip() else None
            except json.JSONDecodeError as exc:
                self._reply(400, _error(400, f"Cannot deserialize the request body: {exc}"))
                return
            self._reply(*server.handle(self.command, split.path, query, body))

        def _reply(self, code: int, payload: Any) -> None:
            data = b"" if code == 204 or payload is None else json.dumps(payload).encode()
            self.send_response(code)
            if data:
                self.send_header("Content-Type", _JSON)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

    return Handler
