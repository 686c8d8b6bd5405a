"""Checkpoint I/O served by the driver to the source's reader, over authenticated loopback.

A Python streaming source's driver-side reader (``latestOffset``, ``partitions``,
``commit``) runs in a Python worker that Spark starts; it has no py4j gateway, so it cannot
call Hadoop's FileSystem API.  The user's driver process can: ``ExactlyOnce.read_stream``
starts a ``CheckpointServer`` on 127.0.0.1 that performs the ``CheckpointFS`` operations
with the driver's ``HadoopFS`` and passes its address and a random secret to the source as
options.  The reader's ``RemoteFS`` connects with that secret: the connection is
authenticated by ``multiprocessing.connection``'s HMAC challenge, and messages are JSON
(nothing is unpickled).  Both ends are on the driver's host.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import secrets
import threading
from multiprocessing import AuthenticationError
from multiprocessing.connection import (
    Client,
    Connection,
    Listener,
    answer_challenge,
    deliver_challenge,
)
from typing import Any

from producer.twophase.checkpoint_fs import CheckpointFS

log = logging.getLogger(__name__)

OPS = frozenset({"read", "write_atomic", "list", "exists", "delete", "lock_key", "hello"})


class CheckpointServer:
    """Serves ``fs`` to this host's processes holding the secret (daemon threads)."""

    def __init__(self, fs: CheckpointFS, info: dict[str, str]) -> None:
        self.fs = fs
        self.info = dict(info)
        self.token = secrets.token_hex(32)
        # Authenticated per connection, in its own thread: a client that never answers the
        # challenge holds up only itself, never the accept loop.
        self._listener = Listener(("127.0.0.1", 0))
        host, port = self._listener.address
        self.address = f"{host}:{port}"
        self._closed = False
        threading.Thread(target=self._accept, name="sharetxn-ckpt-server", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn = self._listener.accept()
            except OSError:
                continue  # closed (the loop ends) or one failed accept
            threading.Thread(
                target=self._serve, args=(conn,), name="sharetxn-ckpt-conn", daemon=True
            ).start()

    def _serve(self, conn: Connection) -> None:
        with contextlib.closing(conn):
            key = self.token.encode()
            try:  # the HMAC challenge both ways, as Listener(authkey=...) does
                deliver_challenge(conn, key)
                answer_challenge(conn, key)
            except (AuthenticationError, EOFError, OSError) as exc:
                log.warning("checkpoint server: refused a connection: %r", exc)
                return
            while True:
                try:
                    request = json.loads(conn.recv_bytes())
                except (EOFError, OSError):
                    return
                try:
                    reply = {"ok": True, "result": self._call(request)}
                except Exception as exc:
                    reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                try:
                    conn.send_bytes(json.dumps(reply).encode())
                except OSError:
                    return

    def _call(self, request: dict[str, Any]) -> Any:
        op = request.get("op")
        if op not in OPS:
            msg = f"unknown operation {op!r}"
            raise ValueError(msg)
        if op == "hello":
            return self.info
        path = str(request["path"])
        if op == "read":
            data = self.fs.read(path)
            return None if data is None else base64.b64encode(data).decode()
        if op == "write_atomic":
            self.fs.write_atomic(path, base64.b64decode(request["data"]))
            return None
        if op == "list":
            return self.fs.list(path)
        if op == "exists":
            return self.fs.exists(path)
        if op == "delete":
            self.fs.delete(path)
            return None
        return self.fs.lock_key(path)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()


class RemoteFSError(OSError):
    """The driver's checkpoint server failed an operation or cannot be reached."""


class RemoteFS:
    """``CheckpointFS`` of the source's reader: every call goes to the driver's server."""

    def __init__(self, address: str, token: str) -> None:
        host, _, port = address.rpartition(":")
        self._address = (host, int(port))
        self._token = token
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"address": self._address, "token": self._token}

    def __setstate__(self, state: dict[str, Any]) -> None:
        host, port = state["address"]
        self._address = (str(host), int(port))
        self._token = state["token"]
        self._conn = None
        self._lock = threading.Lock()

    def _request(self, op: str, **fields: Any) -> Any:
        payload = json.dumps({"op": op, **fields}).encode()
        with self._lock:
            for attempt in (1, 2):  # one reconnect: the connection may have gone stale
                try:
                    if self._conn is None:
                        self._conn = Client(self._address, authkey=self._token.encode())
                    self._conn.send_bytes(payload)
                    reply = json.loads(self._conn.recv_bytes())
                    break
                except (EOFError, OSError, AuthenticationError) as exc:
                    self._drop()
                    if attempt == 2:
                        msg = (
                            f"the driver's checkpoint server {self._address} cannot be "
                            f"reached: {exc!r}"
                        )
                        raise RemoteFSError(msg) from exc
        if not reply.get("ok"):
            raise RemoteFSError(f"checkpoint server: {op} failed: {reply.get('error')}")
        return reply.get("result")

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.close()
            self._conn = None

    def hello(self) -> dict[str, str]:
        return dict(self._request("hello"))

    def read(self, path: str) -> bytes | None:
        data = self._request("read", path=path)
        return None if data is None else base64.b64decode(data)

    def write_atomic(self, path: str, data: bytes) -> None:
        self._request("write_atomic", path=path, data=base64.b64encode(data).decode())

    def list(self, directory: str) -> list[str]:
        return [str(n) for n in self._request("list", path=directory)]

    def exists(self, path: str) -> bool:
        return bool(self._request("exists", path=path))

    def delete(self, path: str) -> None:
        self._request("delete", path=path)

    def lock_key(self, location: str) -> str:
        return str(self._request("lock_key", path=location))

    def close(self) -> None:
        with self._lock:
            self._drop()
