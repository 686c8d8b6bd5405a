"""Durable security metadata: SCRAM credentials and ACLs.

Kafka keeps both in its metadata log; this single-node broker keeps them in
one versioned checkpoint file, ``security-metadata.json`` in the data
directory, replaced atomically (temporary file, fsync, rename, fsync of the
directory) before a change is acknowledged.  The core sees only the
``SecurityStorage`` seam (``load``/``save`` of bytes), so tests and the
simulator can hold it in memory.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any, Protocol

from coordinator.security.acls import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from coordinator.security.scram import ScramCredential, ScramMechanism

FILE_NAME = "security-metadata.json"
FORMAT_VERSION = 1


class SecurityStorage(Protocol):
    def load(self) -> bytes | None: ...

    def save(self, data: bytes) -> None: ...


class MemorySecurityStorage:
    def __init__(self) -> None:
        self.data: bytes | None = None

    def load(self) -> bytes | None:
        return self.data

    def save(self, data: bytes) -> None:
        self.data = data


class FileSecurityStorage:
    """The checkpoint file in a data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME

    def load(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None

    def save(self, data: bytes) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


ScramKey = tuple[str, ScramMechanism]


class SecurityMetadata:
    """SCRAM credentials per (user, mechanism) and the ACL list, saved on every change."""

    def __init__(self, storage: SecurityStorage) -> None:
        self._storage = storage
        self.scram: dict[ScramKey, ScramCredential] = {}
        self.acls: list[AclBinding] = []
        raw = storage.load()
        if raw is not None:
            self._decode(raw)

    def _decode(self, raw: bytes) -> None:
        doc = json.loads(raw)
        if doc.get("version") != FORMAT_VERSION:
            msg = f"{FILE_NAME}: unsupported format version {doc.get('version')!r}"
            raise ValueError(msg)
        for entry in doc["scram"]:
            key = (str(entry["user"]), ScramMechanism[entry["mechanism"]])
            self.scram[key] = ScramCredential(
                salt=base64.b64decode(entry["salt"]),
                stored_key=base64.b64decode(entry["stored_key"]),
                server_key=base64.b64decode(entry["server_key"]),
                iterations=int(entry["iterations"]),
            )
        self.acls = [
            AclBinding(
                ResourceType[a["resource_type"]],
                str(a["resource_name"]),
                PatternType[a["pattern_type"]],
                str(a["principal"]),
                str(a["host"]),
                AclOperation[a["operation"]],
                AclPermissionType[a["permission"]],
            )
            for a in doc["acls"]
        ]

    def _encode(self, scram: dict[ScramKey, ScramCredential], acls: list[AclBinding]) -> bytes:
        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        doc: dict[str, Any] = {
            "version": FORMAT_VERSION,
            "scram": [
                {
                    "user": user,
                    "mechanism": mech.name,
                    "salt": b64(c.salt),
                    "stored_key": b64(c.stored_key),
                    "server_key": b64(c.server_key),
                    "iterations": c.iterations,
                }
                for (user, mech), c in sorted(scram.items())
            ],
            "acls": [
                {
                    "resource_type": a.resource_type.name,
                    "resource_name": a.resource_name,
                    "pattern_type": a.pattern_type.name,
                    "principal": a.principal,
                    "host": a.host,
                    "operation": a.operation.name,
                    "permission": a.permission.name,
                }
                for a in acls
            ],
        }
        return json.dumps(doc, indent=1).encode()

    def save_acls(self, acls: list[AclBinding]) -> None:
        self._storage.save(self._encode(self.scram, acls))
        self.acls = list(acls)

    def save_scram(self, scram: dict[ScramKey, ScramCredential]) -> None:
        self._storage.save(self._encode(scram, self.acls))
        self.scram = dict(scram)

    def scram_credential(self, mechanism: ScramMechanism, user: str) -> ScramCredential | None:
        return self.scram.get((user, mechanism))
