"""Delegation tokens (KIP-48, KIP-373): the controller's rules on a manual clock, the records
in ``__cluster_metadata`` and SCRAM authentication with a token."""

from __future__ import annotations

import base64
import random

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.security.scram import ScramMechanism, ScramServer
from coordinator.security.tokens import (
    DelegationTokens,
    RemoveTokenRecord,
    TokenRecord,
    TokenSettings,
    decode_record,
    encode_record,
    token_hmac,
)
from producer.protocol.security import ClientSecurity, _ScramClient
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode

DAY = 86_400_000
ALICE, BOB, CAROL = "User:alice", "User:bob", "User:carol"
SETTINGS = TokenSettings(
    secret_key="secret", max_lifetime_ms=7 * DAY, expiry_time_ms=DAY, expiry_check_interval_ms=1000
)


def tokens() -> DelegationTokens:
    ids = iter(f"token-{i}" for i in range(100))
    return DelegationTokens(SETTINGS, lambda: next(ids))


def created(t: DelegationTokens, now: int, **kw: object) -> bytes:
    result = t.create(
        str(kw.get("requester", ALICE)),
        kw.get("owner"),  # type: ignore[arg-type]
        list(kw.get("renewers", [BOB])),  # type: ignore[call-overload]
        int(kw.get("max_lifetime_ms", -1)),  # type: ignore[call-overload]
        now,
    )
    assert result.error is ErrorCode.NONE
    for record in result.records:
        t.replay(record)
    return result.hmac


def test_hmac_is_hmac_sha512_of_the_token_id() -> None:
    # RFC 4231-style check against a published HMAC-SHA512 value.
    assert token_hmac("key", "The quick brown fox jumps over the lazy dog").hex() == (
        "b42af09057bac1e2d41708e48a902e09b5ff7f12ab428a4fe86653c73dd248fb"
        "82f948a549f7b791a5b41915ee4d1ec3935357e4e2317250d0372afa2ebeeb3a"
    )


def test_disabled_without_a_secret_key() -> None:
    t = DelegationTokens(TokenSettings(None, 7 * DAY, DAY, 1000))
    assert t.create(ALICE, None, [], -1, 0).error is ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert t.renew(ALICE, b"x", -1, 0).error is ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert t.expire(ALICE, b"x", -1, 0).error is ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert not TokenSettings.of(BrokerConfig({"delegation.token.secret.key": ""})).enabled


def test_create_times_and_owner() -> None:
    t = tokens()
    result = t.create(ALICE, None, [BOB], -1, 1000)
    assert result.token is not None
    assert (result.token.issue_ms, result.token.expiry_ms, result.token.max_ms) == (
        1000,
        1000 + DAY,
        1000 + 7 * DAY,
    )
    assert result.token.owner == ALICE and result.hmac == token_hmac("secret", "token-0")
    assert t.tokens == {}  # nothing changes before the record is replayed
    short = t.create(ALICE, CAROL, [], 5000, 0)
    assert short.token is not None
    assert (short.token.owner, short.token.requester) == (CAROL, ALICE)
    assert (short.token.expiry_ms, short.token.max_ms) == (5000, 5000)
    refused = t.create(ALICE, None, ["Group:x"], -1, 0)
    assert refused.error is ErrorCode.INVALID_PRINCIPAL_TYPE


def test_renew_rules() -> None:
    t = tokens()
    hmac = created(t, 0, owner=CAROL, requester=ALICE, renewers=[BOB])
    assert t.renew(BOB, b"nope", -1, 10).error is ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    # The requester is neither owner nor renewer: it may describe, not renew.
    assert t.renew(ALICE, hmac, -1, 10).error is ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    renewed = t.renew(BOB, hmac, 60_000, 10)
    assert renewed.error is ErrorCode.NONE and renewed.expiry_ms == 60_010
    t.replay(renewed.records[0])
    assert t.tokens["token-0"].expiry_ms == 60_010
    # A period longer than delegation.token.expiry.time.ms is cut to it.
    assert t.renew(CAROL, hmac, 10 * DAY, 20).expiry_ms == 20 + DAY
    # Near the max, the expiry stops at the max.
    short = created(t, 0, owner=CAROL, max_lifetime_ms=30_000)
    assert t.renew(CAROL, short, -1, 10).expiry_ms == 30_000
    assert t.renew(CAROL, hmac, -1, 60_011).error is ErrorCode.DELEGATION_TOKEN_EXPIRED


def test_expire_rules() -> None:
    t = tokens()
    hmac = created(t, 0)
    assert t.expire(CAROL, hmac, -1, 5).error is ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    later = t.expire(BOB, hmac, 100, 5)
    assert later.expiry_ms == 105
    t.replay(later.records[0])
    assert t.expire(ALICE, hmac, 100, 200).error is ErrorCode.DELEGATION_TOKEN_EXPIRED
    now = t.expire(ALICE, hmac, -1, 200)
    assert now.error is ErrorCode.NONE and now.expiry_ms == 200
    assert now.records == (RemoveTokenRecord("token-0"),)
    t.replay(now.records[0])
    assert t.tokens == {} and t.by_hmac(hmac) is None


def test_describe_filters() -> None:
    t = tokens()
    created(t, 0, requester=ALICE, renewers=[BOB])
    created(t, 0, requester=CAROL, renewers=[])

    def ids(requester: str, owners: list[str] | None, allowed: bool = False) -> list[str]:
        return [i.token_id for i, _h in t.describe(requester, owners, lambda _t: allowed)]

    assert ids(ALICE, None) == ["token-0"]
    assert ids(BOB, None) == ["token-0"]  # a renewer sees the token
    assert ids(BOB, None, allowed=True) == ["token-0", "token-1"]
    assert ids(CAROL, [ALICE], allowed=True) == ["token-0"]
    assert ids(CAROL, [BOB]) == []  # bob renews token-0, carol may not see it


def test_records_round_trip() -> None:
    t = tokens()
    result = t.create(ALICE, None, [BOB], -1, 7)
    for record in (*result.records, RemoveTokenRecord("token-0")):
        assert decode_record(*encode_record(record)) == record
    assert decode_record(None, b"{}") is None
    assert isinstance(result.records[0], TokenRecord)


def _core(storage: MemoryStorage, clock: ManualClock) -> BrokerCore:
    config = BrokerConfig(
        {
            "delegation.token.secret.key": "secret",
            "delegation.token.expiry.time.ms": "60000",
            "delegation.token.expiry.check.interval.ms": "10000",
        }
    )
    return BrokerCore(storage, clock, config, random.Random(1))


def test_tokens_outlive_a_restart_and_expired_ones_are_swept() -> None:
    storage, clock = MemoryStorage(), ManualClock(0)
    core = _core(storage, clock)
    core.create_topic("t", 1, 1)
    store = core.tokens
    result = store.tokens.create(ALICE, None, [], -1, clock.now_ms())
    store.apply(result.records)
    assert result.token is not None
    token_id = result.token.token_id
    restarted = _core(storage, clock)
    assert restarted.topics.get("t") is not None  # the topic registry skips token records
    assert restarted.tokens.tokens.by_hmac(result.hmac) is not None
    clock.advance(60_000)  # at the expiry: not expired yet
    assert token_id in restarted.tokens.tokens.tokens
    clock.advance(10_000)  # the next sweep after it
    assert restarted.tokens.tokens.tokens == {}
    assert _core(storage, clock).tokens.tokens.tokens == {}


def test_nothing_is_scheduled_without_a_secret_key() -> None:
    clock = ManualClock(0)
    core = BrokerCore(MemoryStorage(), clock, BrokerConfig(), random.Random(1))
    assert not core.tokens.tokens.enabled
    assert core.tokens._timer is None  # no sweep scheduled: the simulator sees no new timer


def _exchange(server: ScramServer, client: _ScramClient) -> None:
    token: bytes | None = client.first()
    while token is not None:
        token = client.next(server.evaluate(token))


def test_scram_with_a_token_authenticates_as_its_owner() -> None:
    t = tokens()
    hmac = created(t, 0, owner=CAROL)
    password = base64.b64encode(hmac).decode()

    def lookup(mechanism: ScramMechanism, token_id: str) -> object:
        cred, owner = t.credential(mechanism, token_id), t.owner(token_id)
        expiry = t.tokens[token_id].expiry_ms if token_id in t.tokens else 0
        return None if cred is None or owner is None else (cred, owner.partition(":")[2], expiry)

    for mechanism in ScramMechanism:
        server = ScramServer(mechanism, lambda _m, _u: None, token_lookup=lookup)  # type: ignore[arg-type]
        client = _ScramClient(mechanism.mechanism_name, "token-0", password, token_auth=True)
        _exchange(server, client)
        assert server.complete and server.token_authenticated
        assert server.principal == CAROL
        assert server.credential_expiry_ms == t.tokens["token-0"].expiry_ms  # KIP-368
    # Without the extension the token id is an unknown user.
    server = ScramServer(ScramMechanism.SCRAM_SHA_256, lambda _m, _u: None, token_lookup=lookup)  # type: ignore[arg-type]
    try:
        _exchange(server, _ScramClient("SCRAM-SHA-256", "token-0", password))
    except Exception as exc:
        assert "invalid credentials" in str(exc)
    else:
        raise AssertionError("authenticated without tokenauth")


def test_client_reads_tokenauth_from_the_jaas_config() -> None:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="tid" password="pw" tokenauth="true";'
    )
    security = ClientSecurity.from_config(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": jaas,
        }
    )
    assert security.token_auth and security.username == "tid"
    assert b",tokenauth=true" in _ScramClient("SCRAM-SHA-256", "tid", "pw", token_auth=True).first()
