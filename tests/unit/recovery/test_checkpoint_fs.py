"""The checkpoint file-system layer: the local store and the driver's loopback server."""

from __future__ import annotations

import socket
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client
from pathlib import Path

import pytest

from producer.spark.fs_server import CheckpointServer, RemoteFS, RemoteFSError
from producer.twophase.checkpoint_fs import (
    LOCAL,
    CheckpointFS,
    default_lock_key,
    host_lock_file,
    is_local,
    join,
    local_path,
    scheme,
)
from producer.twophase.spark_checkpoint import (
    Intent,
    IntentTransaction,
    read_checkpoint,
    write_intent,
)


def exercise(fs: CheckpointFS, root: str) -> None:
    """The contract every CheckpointFS keeps."""
    assert fs.read(join(root, "missing")) is None
    assert fs.list(join(root, "nowhere")) == []
    assert not fs.exists(join(root, "d", "a"))
    fs.write_atomic(join(root, "d", "a"), b"one")  # creates the parent
    fs.write_atomic(join(root, "d", "a"), b"two")  # replaces
    fs.write_atomic(join(root, "d", "sub", "x"), b"")
    assert fs.read(join(root, "d", "a")) == b"two"
    assert fs.exists(join(root, "d", "a"))
    assert fs.list(join(root, "d")) == ["a"]  # files only, no temporary files left
    fs.delete(join(root, "d", "a"))
    fs.delete(join(root, "d", "a"))  # a missing file is fine
    assert fs.list(join(root, "d")) == []


def test_locations() -> None:
    assert scheme("/tmp/x") == "" and scheme("file:///tmp/x") == "file"
    assert scheme("s3a://b/k") == "s3a" and is_local("file:/tmp/x") and not is_local("hdfs://n/x")
    assert local_path("file:///tmp/x") == Path("/tmp/x")
    assert join("s3a://b/chk/", "offsets", "3") == "s3a://b/chk/offsets/3"
    with pytest.raises(ValueError, match="not a local path"):
        local_path("s3a://b/k")
    # Local checkpoints lock beside the state; others in a per-host directory.
    assert default_lock_key("file:/tmp/c") == "/tmp/c/.sharetxn-resolve.lock"
    assert (
        default_lock_key("s3a://b/c") == host_lock_file("s3a://b/c") == host_lock_file("s3a://b/c/")
    )


def test_local_fs(tmp_path: Path) -> None:
    exercise(LOCAL, str(tmp_path))
    exercise(LOCAL, f"file://{tmp_path}/uri")


def test_the_checkpoint_server_serves_a_store_to_holders_of_its_secret(tmp_path: Path) -> None:
    server = CheckpointServer(LOCAL, {"checkpointLocation": "file:/c", "x": "y"})
    try:
        # A client that never answers the challenge holds up nobody else.
        host, port = server.address.rsplit(":", 1)
        silent = socket.create_connection((host, int(port)))
        remote = RemoteFS(server.address, server.token)
        assert remote.hello() == {"checkpointLocation": "file:/c", "x": "y"}
        exercise(remote, str(tmp_path))
        assert remote.lock_key("s3a://b/c") == host_lock_file("s3a://b/c")
        # The reader of a checkpoint view through it sees what was written locally.
        write_intent(tmp_path / "chk", Intent(4, (IntentTransaction("t", 1, 2, "w"),), "q"))
        view = read_checkpoint(str(tmp_path / "chk"), fs=remote)
        assert list(view.intents) == [4] and view.fs is remote
        # Errors of the store come back as errors, not as a dead connection.
        (tmp_path / "file").write_text("")
        with pytest.raises(RemoteFSError, match="write_atomic failed"):
            remote.write_atomic(str(tmp_path / "file" / "below"), b"x")
        assert remote.exists(str(tmp_path / "file"))
        remote.close()
        # Without the secret: no connection (HMAC challenge), and nothing is served.
        with pytest.raises(AuthenticationError):
            Client(("127.0.0.1", int(server.address.rsplit(":", 1)[1])), authkey=b"guess")
        with pytest.raises(RemoteFSError, match="cannot be reached"):
            RemoteFS(server.address, "0" * 64).exists(str(tmp_path))
        silent.close()
    finally:
        server.close()
