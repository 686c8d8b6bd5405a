"""Kerberos principal rules (Kafka's KerberosShortNamer examples) and the SASL/GSSAPI server's
exchange over a fake acceptor (no KDC)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.security import kerberos
from coordinator.security.kerberos import GssapiServer, jaas_options, server_identity
from coordinator.security.kerberos_names import (
    KerberosName,
    KerberosNameError,
    KerberosShortNamer,
    default_realm,
    split_rules,
)
from coordinator.security.scram import SaslAuthenticationFailedError
from producer.protocol import kerberos as client_kerberos
from producer.protocol.kerberos import KerberosSettings
from producer.protocol.security import ClientSecurity
from txn.errors import InvalidConfigError


def short(rules: list[str] | None, name: str, realm: str = "REALM.COM") -> str:
    return KerberosShortNamer(realm, rules).short_name(KerberosName.parse(name))


def test_parse_names() -> None:
    assert KerberosName.parse("kafka/host@R") == KerberosName("kafka", "host", "R")
    assert KerberosName.parse("alice@R") == KerberosName("alice", None, "R")
    assert KerberosName.parse("alice") == KerberosName("alice", None, None)
    assert str(KerberosName.parse("kafka/host@R")) == "kafka/host@R"
    with pytest.raises(KerberosNameError, match="Malformed Kerberos name"):
        KerberosName.parse("a@b@c")


def test_default_rule() -> None:
    assert short(None, "user/host@REALM.COM") == "user"
    assert short(["DEFAULT"], "user@REALM.COM") == "user"
    assert short(None, "plain") == "plain"
    with pytest.raises(KerberosNameError, match=r"No rules apply to user@OTHER\.COM"):
        short(None, "user@OTHER.COM")


def test_substitutions() -> None:
    rules = [
        "RULE:[1:$1](App\\..*)s/App\\.(.*)/$1/g",
        "RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g",
        "DEFAULT",
    ]
    assert short(rules, "App.service-name/example.com@REALM.COM") == "service-name"
    assert short(rules, "App.service-name@REALM.COM") == "service-name"
    assert short(rules, "user/host@REALM.COM") == "user"
    docs = ["RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//", "DEFAULT"]
    assert short(docs, "alice@MYDOMAIN.COM") == "alice"


def test_lower_and_upper_case() -> None:
    rules = [
        "RULE:[1:$1]/L",
        "RULE:[2:$1](Test.*)s/ABC///L",
        "RULE:[2:$1](ABC.*)s/ABC/XYZ/g/L",
        "RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g/L",
        "RULE:[2:$1]/L",
        "DEFAULT",
    ]
    assert short(rules, "User@REALM.COM") == "user"
    assert short(rules, "TestABC/host@FOO.COM") == "test"
    assert short(rules, "ABC_User_ABC/host@FOO.COM") == "xyz_user_xyz"
    assert short(rules, "App.SERVICE-name/example.com@REALM.COM") == "service-name"
    assert short(rules, "User/root@REALM.COM") == "user"
    upper = [r.replace("/L", "/U") for r in rules]
    assert short(upper, "User@REALM.COM") == "USER"
    assert short(upper, "TestABC/host@FOO.COM") == "TEST"
    assert short(upper, "ABC_User_ABC/host@FOO.COM") == "XYZ_USER_XYZ"


@pytest.mark.parametrize(
    "rule",
    [
        "RULE:[1:$1]/L/U",
        "RULE:[1:$1]/U/L",
        "RULE:[1:$1]/LU",
        "RULE:[1:$1]/UL",
        "RULE:[1:$1]/LL",
        "RULE:[1:$1]/UU",
        "RULE:[1:$1]/L/",
        "RULE:[1:$1]/U/",
        "NOT A RULE",
    ],
)
def test_invalid_rules(rule: str) -> None:
    with pytest.raises(KerberosNameError, match="Invalid rule"):
        KerberosShortNamer("R", [rule])


def test_non_simple_results_and_bad_formats() -> None:
    with pytest.raises(KerberosNameError, match="Non-simple name alice@R"):
        short(["RULE:[1:$1@$0]"], "alice@R")
    with pytest.raises(KerberosNameError, match="outside of the valid range 0 to 1"):
        short(["RULE:[1:$2]"], "alice@R")
    # The first rule that applies wins; a rule for other component counts is passed over.
    assert short(["RULE:[2:$1]", "RULE:[1:x$1]"], "alice@R") == "xalice"


def test_config_helpers() -> None:
    assert split_rules(None) is None
    assert split_rules("RULE:[1:$1]/L, DEFAULT") == ["RULE:[1:$1]/L", "DEFAULT"]
    assert jaas_options('M required useKeyTab=true keyTab="/k t" principal="a@R";') == {
        "useKeyTab": "true",
        "keyTab": "/k t",
        "principal": "a@R",
    }


def test_default_realm(tmp_path: Path) -> None:
    conf = tmp_path / "krb5.conf"
    conf.write_text("[libdefaults]\n  default_realm = EX.COM\n[realms]\n  default_realm = NO\n")
    assert default_realm(str(conf)) == "EX.COM"
    assert default_realm(str(conf) + ".missing") == ""


class FakeAcceptor:
    """An acceptor whose context is established by the token b"ap-req"; wrapping is a prefix."""

    def __init__(self, reply: bytes | None = b"ap-rep", peer: str = "bob/admin@R") -> None:
        self.established = False
        self._reply = reply
        self._peer = peer

    def step(self, token: bytes) -> bytes | None:
        if token != b"ap-req":
            raise SaslAuthenticationFailedError("GSS-API: bad token")
        self.established = True
        return self._reply

    def initiator(self) -> str:
        return self._peer

    def wrap(self, data: bytes) -> bytes:
        return b"W" + data

    def unwrap(self, data: bytes) -> bytes:
        assert data[:1] == b"W"
        return data[1:]


def test_exchange_with_mutual_authentication() -> None:
    rules = KerberosShortNamer("R", ["RULE:[2:$1@$0](.*@R)s/@.*//U", "DEFAULT"])
    server = GssapiServer(FakeAcceptor(), rules)
    assert server.evaluate(b"ap-req") == b"ap-rep"
    assert server.evaluate(b"") == b"W\x01\x01\x00\x00"  # no security layer, 64 KiB
    # The client's authorization id is logged, not used (Kafka's SaslServerCallbackHandler).
    assert server.evaluate(b"W\x01\x00\x00\x00someone-else") == b""
    assert server.complete
    assert server.principal == "User:BOB"
    assert server.authorization_id == "someone-else"


def test_no_short_name_completes_the_exchange_then_closes() -> None:
    """As Kafka: the SASL exchange succeeds; the principal fails at the next request."""
    server = GssapiServer(FakeAcceptor(reply=None, peer="alice@OTHER"), KerberosShortNamer("R"))
    server.evaluate(b"ap-req")
    assert server.evaluate(b"W\x01\x00\x00\x00") == b""
    assert server.complete
    assert server.principal_error == (
        "Failed to set name for 'alice@OTHER' based on Kerberos authentication rules: "
        "No rules apply to alice@OTHER, rules [DEFAULT]"
    )


def test_exchange_without_mutual_authentication() -> None:
    server = GssapiServer(FakeAcceptor(reply=None, peer="alice@R"), KerberosShortNamer("R"))
    assert server.evaluate(b"ap-req") == b"W\x01\x01\x00\x00"
    assert server.evaluate(b"W\x01\x00\x00\x00") == b""
    assert server.principal == "User:alice"


@pytest.mark.parametrize(
    ("tokens", "peer"),
    [
        ([b"garbage"], "alice@R"),
        ([b"ap-req", b"unexpected"], "alice@R"),
        ([b"ap-req", b"", b"W\x02\x00\x00\x00"], "alice@R"),  # integrity: not offered
        ([b"ap-req", b"", b"W\x01"], "alice@R"),
    ],
)
def test_failures_answer_kafkas_message(tokens: list[bytes], peer: str) -> None:
    server = GssapiServer(FakeAcceptor(peer=peer), KerberosShortNamer("R"))
    with pytest.raises(SaslAuthenticationFailedError) as failed:
        for token in tokens:
            server.evaluate(token)
    assert str(failed.value) == (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism GSSAPI"
    )
    assert not server.complete


KRB5_LINE = (
    "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
    'keyTab="{keytab}" principal="kafka/localhost@R"{extra};'
)


def identity_error(jaas: str | None, service: str | None = "kafka") -> str:
    with pytest.raises(InvalidConfigError) as refused:
        server_identity(jaas, jaas_options(jaas), service, "sasl_plaintext.KafkaServer")
    return str(refused.value)


def test_broker_identity_is_refused_with_kafkas_messages(tmp_path: Path) -> None:
    keytab = tmp_path / "kafka.keytab"
    keytab.write_bytes(b"\x05\x02")
    line = KRB5_LINE.format(keytab=keytab, extra="")
    assert "Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry" in (
        identity_error(None)
    )
    assert "No serviceName defined in either JAAS or Kafka configs" in identity_error(line, None)
    conflicting = KRB5_LINE.format(keytab=keytab, extra=' serviceName="other"')
    assert "Conflicting serviceName values" in identity_error(conflicting)
    missing = KRB5_LINE.format(keytab=tmp_path / "none.keytab", extra="")
    assert "Unable to obtain password from user" in identity_error(missing)
    plain = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'
    assert "Krb5LoginModule" in identity_error(plain)


def test_a_missing_gssapi_package_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keytab = tmp_path / "kafka.keytab"
    keytab.write_bytes(b"\x05\x02")

    def no_module(name: str) -> object:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(kerberos.importlib, "import_module", no_module)
    message = identity_error(KRB5_LINE.format(keytab=keytab, extra=""))
    assert "pip install 'sharetxn[kerberos]'" in message
    assert "\n" not in message


def test_client_settings_librdkafka_and_jaas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_kerberos.importlib, "import_module", lambda name: object())
    keytab = tmp_path / "alice.keytab"
    keytab.write_bytes(b"\x05\x02")
    base = {"security.protocol": "sasl_plaintext", "sasl.mechanism": "GSSAPI"}
    rd = ClientSecurity.from_config({**base, "sasl.kerberos.keytab": str(keytab)})
    assert rd.kerberos == KerberosSettings("kafka", str(keytab), "kafkaclient")
    jaas = (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
        f'keyTab="{keytab}" principal="alice@R" serviceName="kfk";'
    )
    java = ClientSecurity.from_config({**base, "sasl.jaas.config": jaas})
    assert java.kerberos == KerberosSettings("kfk", str(keytab), "alice@R")
    cache = ClientSecurity.from_config(base)  # kinit's ticket cache
    assert cache.kerberos == KerberosSettings("kafka", None, None)
