"""What new effective broker settings do to the listeners (bound, closed, new SSL contexts)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coordinator.security.listener_changes import plan_listeners, tls_settings
from coordinator.security.listeners import listeners_from_config
from tests.security_certs import make_certs
from txn.config import BrokerConfig
from txn.errors import InvalidConfigError

LISTEN = ("127.0.0.1", 0)


def test_listeners_added_and_removed_by_name() -> None:
    old = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:9092"})
    current = listeners_from_config(old, LISTEN)
    new = old.with_overrides(
        {
            # the kept listener's address is not looked at: Kafka compares names
            "listeners": "PLAINTEXT://127.0.0.1:1,EXTRA://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT",
        }
    )
    plan = plan_listeners(current, {}, new, LISTEN)
    assert [x.name for x in plan.added] == ["EXTRA"] and not plan.removed
    back = plan_listeners(listeners_from_config(new, LISTEN), {}, old, LISTEN)
    assert [x.name for x in back.removed] == ["EXTRA"] and not back.added
    assert plan_listeners(current, {}, old, LISTEN).empty


def test_tls_contexts_made_again_only_when_their_settings_change(tmp_path: Path) -> None:
    first, second = make_certs(tmp_path / "a"), make_certs(tmp_path / "b")
    old = BrokerConfig(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(first.server_keystore),
        }
    )
    current = listeners_from_config(old, LISTEN)
    loaded = {"SSL": tls_settings(old, current[1])}
    same = old.with_overrides({"message.max.bytes": "2000"})
    assert plan_listeners(current, loaded, same, LISTEN).empty
    rotated = old.with_overrides(
        {"listener.name.ssl.ssl.keystore.location": str(second.server_keystore)}
    )
    plan = plan_listeners(current, loaded, rotated, LISTEN)
    assert set(plan.contexts) == {"SSL"} and plan.loaded["SSL"] == tls_settings(rotated, current[1])
    broken = old.with_overrides({"listener.name.ssl.ssl.keystore.location": str(tmp_path)})
    with pytest.raises(InvalidConfigError):
        plan_listeners(current, loaded, broken, LISTEN)
    # the same path, its file written since it was loaded: loaded again (as Kafka)
    first.server_keystore.write_bytes(second.server_keystore.read_bytes())
    stat = first.server_keystore.stat()
    os.utime(first.server_keystore, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert set(plan_listeners(current, loaded, same, LISTEN).contexts) == {"SSL"}
