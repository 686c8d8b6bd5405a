"""Kerberos principal names and ``sasl.kerberos.principal.to.local.rules``, as Kafka.

A principal ``service/host@REALM`` is mapped to a short name by the first rule that
applies (Kafka's KerberosShortNamer); ``User:<short name>`` is the Kafka principal.  Rules:

- ``DEFAULT``: the first component, when the realm is the default realm;
- ``RULE:[n:format](match)s/from/to/g/L``: for names of ``n`` components, ``format`` with
  ``$0`` (realm) and ``$1``... (components); kept if it matches the regular expression
  ``match`` (optional); then ``s/from/to/`` (``g``: every occurrence) and ``/L`` or ``/U``
  (lower or upper case).  A result holding ``/`` or ``@`` is refused.

No rule applying is an error, as a result that is not a simple name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: Kafka's KerberosName.NAME_PARSER.
_NAME = re.compile(r"([^/@]*)(/([^/@]*))?@([^/@]*)")
#: Kafka's KerberosShortNamer.RULE_PARSER.
_RULE = re.compile(
    r"((DEFAULT)|((RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?/?(L|U)?)))"
)
_PARAMETER = re.compile(r"([^$]*)(\$(\d*))?")
_NON_SIMPLE = re.compile(r"[/@]")


class KerberosNameError(ValueError):
    """A malformed name or rule, or no rule applying (Kafka's NoMatchingRule, BadFormatString)."""


@dataclass(frozen=True, slots=True)
class KerberosName:
    service: str
    host: str | None
    realm: str | None

    @classmethod
    def parse(cls, text: str) -> KerberosName:
        found = _NAME.fullmatch(text)
        if found is None:
            if "@" in text:
                msg = f"Malformed Kerberos name: {text}"
                raise KerberosNameError(msg)
            return cls(text, None, None)
        return cls(found.group(1), found.group(3), found.group(4))

    def __str__(self) -> str:
        text = self.service
        if self.host is not None:
            text += f"/{self.host}"
        if self.realm is not None:
            text += f"@{self.realm}"
        return text


def _java_replacement(to: str) -> str:
    """A java.util.regex replacement (``$n`` groups, ``\\`` escapes) for ``re.sub``."""
    out: list[str] = []
    i = 0
    while i < len(to):
        ch = to[i]
        if ch == "\\" and i + 1 < len(to):
            out.append(to[i + 1].replace("\\", "\\\\"))
            i += 2
        elif ch == "$" and i + 1 < len(to) and to[i + 1].isdigit():
            j = i + 1
            while j < len(to) and to[j].isdigit():
                j += 1
            out.append(f"\\g<{to[i + 1 : j]}>")
            i = j
        else:
            out.append("\\\\" if ch == "\\" else ch)
            i += 1
    return "".join(out)


@dataclass(frozen=True, slots=True)
class KerberosRule:
    text: str
    default_realm: str
    components: int = 0
    format: str = ""
    match: re.Pattern[str] | None = None
    from_pattern: re.Pattern[str] | None = None
    to: str = ""
    repeat: bool = False
    lower: bool = False
    upper: bool = False

    @property
    def is_default(self) -> bool:
        return self.text == "DEFAULT"

    def _format(self, params: Sequence[str]) -> str:
        result: list[str] = []
        start = 0
        text = self.format
        while start < len(text):
            found = _PARAMETER.match(text, start)
            assert found is not None
            result.append(found.group(1))
            number = found.group(3)
            if number is not None:
                if not number:
                    msg = f"bad format in username mapping in {number}"
                    raise KerberosNameError(msg)
                index = int(number)
                if index >= len(params):
                    msg = (
                        f"index {index} from {text} is outside of the valid range 0 to "
                        f"{len(params) - 1}"
                    )
                    raise KerberosNameError(msg)
                result.append(params[index])
            if found.end() == start:
                break
            start = found.end()
        return "".join(result)

    def apply(self, params: Sequence[str]) -> str | None:
        """The short name of ``params`` ([realm, component...]), or None: not this rule."""
        result: str | None = None
        if self.is_default:
            if params[0] == self.default_realm:
                result = params[1]
        elif len(params) - 1 == self.components:
            base = self._format(params)
            if self.match is None or self.match.fullmatch(base):
                if self.from_pattern is None:
                    result = base
                else:
                    result = self.from_pattern.sub(
                        _java_replacement(self.to), base, count=0 if self.repeat else 1
                    )
        if result is not None and _NON_SIMPLE.search(result):
            msg = f"Non-simple name {result} after auth_to_local rule {self.text}"
            raise KerberosNameError(msg)
        if result is not None and self.lower:
            return result.lower()
        if result is not None and self.upper:
            return result.upper()
        return result


def parse_rules(default_realm: str, rules: Sequence[str] | None) -> list[KerberosRule]:
    """Kafka's KerberosShortNamer.fromUnparsedRules (None: ``DEFAULT``)."""
    parsed: list[KerberosRule] = []
    for text in rules if rules is not None else ["DEFAULT"]:
        found = _RULE.match(text)
        if found is None:
            msg = f"Invalid rule: {text}"
            raise KerberosNameError(msg)
        if found.end() != len(text):
            msg = f"Invalid rule: `{text}`, unmatched substring: `{text[found.end() :]}`"
            raise KerberosNameError(msg)
        if found.group(2) is not None:
            parsed.append(KerberosRule("DEFAULT", default_realm))
            continue
        try:
            parsed.append(
                KerberosRule(
                    text,
                    default_realm,
                    components=int(found.group(5)),
                    format=found.group(6),
                    match=re.compile(found.group(8)) if found.group(8) is not None else None,
                    from_pattern=(
                        re.compile(found.group(10)) if found.group(10) is not None else None
                    ),
                    to=found.group(11) or "",
                    repeat=found.group(12) == "g",
                    lower=found.group(13) == "L",
                    upper=found.group(13) == "U",
                )
            )
        except (ValueError, re.error) as exc:
            msg = f"Invalid rule: {text} ({exc})"
            raise KerberosNameError(msg) from None
    return parsed


def split_rules(text: str | None) -> list[str] | None:
    """The rules of the list-valued config (comma-separated; None when unset)."""
    if text is None or not text.strip():
        return None
    return [rule.strip() for rule in text.split(",") if rule.strip()]


class KerberosShortNamer:
    def __init__(self, default_realm: str, rules: Sequence[str] | None = None) -> None:
        self.rules = parse_rules(default_realm, rules)

    def short_name(self, name: KerberosName) -> str:
        if name.host is None:
            if name.realm is None:
                return name.service
            params = [name.realm, name.service]
        else:
            params = [name.realm or "", name.service, name.host]
        for rule in self.rules:
            result = rule.apply(params)
            if result is not None:
                return result
        rules = ", ".join(rule.text for rule in self.rules)
        msg = f"No rules apply to {name}, rules [{rules}]"
        raise KerberosNameError(msg)


def default_realm(krb5_conf: str | None) -> str:
    """``[libdefaults] default_realm`` of the Kerberos config file ("" when none, as Kafka)."""
    path = Path(krb5_conf or "/etc/krb5.conf")
    try:
        text = path.read_text()
    except OSError:
        return ""
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == "libdefaults" and line.split("=", 1)[0].strip() == "default_realm":
            return line.split("=", 1)[1].strip()
    return ""
