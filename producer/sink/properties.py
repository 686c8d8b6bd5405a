"""Java-style ``.properties`` files, as Kafka's tools and Connect workers read them."""

from __future__ import annotations

from pathlib import Path

__all__ = ["PropertiesError", "read_properties"]


class PropertiesError(ValueError):
    """A line of a properties file that is not ``key=value`` or ``key: value``."""


def read_properties(path: Path) -> dict[str, str]:
    """``key=value`` or ``key: value`` lines, ``#``/``!`` comments, ``\\`` continuations.

    OSError when the file cannot be read; PropertiesError (with the file and line) on a line
    that holds no key and separator.
    """
    text = path.read_text(encoding="utf-8")
    props: dict[str, str] = {}
    pending = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        key, sep, value = _split_property(line)
        if not sep or not key:
            msg = f"{path}:{number}: expected key=value, got {raw.strip()!r}"
            raise PropertiesError(msg)
        props[key] = value
    return props


def _split_property(line: str) -> tuple[str, str, str]:
    cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
    if cut < 0:
        return line, "", ""
    return line[:cut].strip(), line[cut], line[cut + 1 :].strip()
