"""A throwaway MIT Kerberos realm for the GSSAPI tests: its own krb5.conf, KDC and keytabs.

Everything lives in a temporary directory: ``KRB5_CONFIG`` and ``KRB5_KDC_PROFILE`` point there
(never at the system's /etc/krb5.conf); ``krb5kdc -n`` runs as a child process on a free port.
``env()`` gives the variables a process (our broker, a client, a JVM) needs to use the realm.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

REALM = "TEST.REALM"
TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local")


def missing_tools() -> list[str]:
    """The MIT Kerberos programs this machine lacks (Debian: krb5-kdc, krb5-admin-server)."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [tool for tool in TOOLS if shutil.which(tool, path=search) is None]


def _tool(name: str) -> str:
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    found = shutil.which(name, path=search)
    assert found is not None, name
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Kdc:
    """``with Kdc(tmp) as kdc``: a running realm; ``kdc.keytab(principal)`` makes a keytab."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.krb5_conf = self.dir / "krb5.conf"
        self.kdc_conf = self.dir / "kdc.conf"
        self._proc: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        return {
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self.kdc_conf),
            "KRB5CCNAME": f"FILE:{self.dir / 'ccache'}",
            "KRB5_CLIENT_KTNAME": str(self.dir / "none.keytab"),
            "KRB5RCACHETYPE": "none",
        }

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            args, env={**os.environ, **self.env()}, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            msg = f"{' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}"
            raise RuntimeError(msg)
        return done.stdout

    def __enter__(self) -> Kdc:
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            f"  default_realm = {REALM}\n"
            "  dns_lookup_kdc = false\n"
            "  dns_lookup_realm = false\n"
            "  rdns = false\n"
            "  udp_preference_limit = 1\n"
            "[realms]\n"
            f"  {REALM} = {{\n    kdc = 127.0.0.1:{self.port}\n  }}\n"
            "[domain_realm]\n"
            f"  localhost = {REALM}\n"
            f"  127.0.0.1 = {REALM}\n"
        )
        self.kdc_conf.write_text(
            "[kdcdefaults]\n"
            f"  kdc_ports = {self.port}\n"
            f"  kdc_tcp_ports = {self.port}\n"
            "[realms]\n"
            f"  {REALM} = {{\n"
            f"    database_name = {self.dir / 'principal'}\n"
            f"    key_stash_file = {self.dir / 'stash'}\n"
            f"    acl_file = {self.dir / 'kadm5.acl'}\n"
            "    supported_enctypes = aes256-cts-hmac-sha1-96:normal\n"
            "  }\n"
            "[logging]\n"
            f"  kdc = FILE:{self.dir / 'kdc.log'}\n"
        )
        self._run(_tool("kdb5_util"), "create", "-s", "-r", REALM, "-P", "masterpw")
        with (self.dir / "krb5kdc.out").open("wb") as log:
            self._proc = subprocess.Popen(
                [_tool("krb5kdc"), "-n", "-r", REALM],
                env={**os.environ, **self.env()},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 15
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    break
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    self.__exit__(None, None, None)
                    msg = f"krb5kdc did not start: {(self.dir / 'krb5kdc.out').read_text()}"
                    raise RuntimeError(msg) from None
                time.sleep(0.1)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def keytab(self, principal: str) -> Path:
        """Add ``principal`` (random key) to the realm and export its key to a new keytab."""
        path = self.dir / (principal.replace("/", "_").replace("@", "_") + ".keytab")
        self._run(_tool("kadmin.local"), "-r", REALM, "-q", f"addprinc -randkey {principal}")
        self._run(_tool("kadmin.local"), "-r", REALM, "-q", f"ktadd -k {path} {principal}")
        return path


@dataclass(frozen=True)
class Realm:
    """A running realm with a broker (kafka/localhost) and two client keytabs."""

    kdc: Kdc
    broker_keytab: Path
    alice_keytab: Path
    bob_keytab: Path


def why_not() -> str | None:
    """Why the GSSAPI tests cannot run here (None: they can), in one line."""
    missing = missing_tools()
    if missing:
        return (
            f"GSSAPI tests need MIT Kerberos' KDC ({', '.join(missing)} missing: apt-get install "
            "krb5-kdc krb5-admin-server)"
        )
    if importlib.util.find_spec("gssapi") is None:
        return "GSSAPI tests need the gssapi package: pip install -e '.[kerberos]'"
    return None


@contextmanager
def running_realm(directory: Path) -> Iterator[Realm]:
    """A realm, with KRB5_CONFIG set in this process (our clients; the brokers it starts)."""
    saved = {key: os.environ.get(key) for key in ("KRB5_CONFIG", "KRB5RCACHETYPE")}
    with Kdc(directory) as kdc:
        os.environ["KRB5_CONFIG"] = kdc.env()["KRB5_CONFIG"]
        os.environ["KRB5RCACHETYPE"] = "none"  # no replay cache files outside the test's dir
        try:
            yield Realm(
                kdc,
                kdc.keytab(f"kafka/localhost@{REALM}"),
                kdc.keytab(f"alice@{REALM}"),
                kdc.keytab(f"bob/admin@{REALM}"),
            )
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
