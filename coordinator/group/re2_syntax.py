"""RE2J's regular expressions, as Kafka's group coordinator compiles a ``SubscribedTopicRegex``.

Kafka compiles a member's regex with RE2J (``com.google.re2j.Pattern.compile``, Perl flags)
and resolves it with ``matcher(topic).matches()``: the whole name must match.  Python's
``re`` is another dialect (backreferences, lookaround, atomic groups, ``\\Z``, other flags)
and backtracks, so a hostile pattern could stall the event loop.  This module parses RE2's
syntax itself -- refusing what RE2J refuses, with RE2J's error descriptions -- and matches
with a Thompson NFA (a set of states per character: linear in the name's length), whose
state sets are cached as a lazy DFA (about 0.1 s for 10,000 names).

What it does not model: topic names are ASCII (``[a-zA-Z0-9._-]``), so character classes are
kept as sets of ASCII characters (a Unicode class or script, ``\\pL``, ``\\p{Greek}``, is reduced
to its ASCII members; a non-ASCII character of a name matches only negated classes and
``.``); case folding is ASCII's; non-greedy repetition is matched as greedy (whether a whole
name matches does not depend on it).  Counted repetitions are expanded; an expansion past
``MAX_STATES`` states is refused as "expression too large" (RE2J would accept it).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

__all__ = ["MAX_STATES", "Re2Pattern", "RegexSyntaxError", "compile_re2"]

ERR_INVALID_CHAR_RANGE = "invalid character class range"
ERR_INVALID_ESCAPE = "invalid escape sequence"
ERR_INVALID_NAMED_CAPTURE = "invalid named capture"
ERR_INVALID_PERL_OP = "invalid or unsupported Perl syntax"
ERR_INVALID_REPEAT_OP = "invalid nested repetition operator"
ERR_INVALID_REPEAT_SIZE = "invalid repeat count"
ERR_MISSING_BRACKET = "missing closing ]"
ERR_MISSING_PAREN = "missing closing )"
ERR_MISSING_REPEAT_ARGUMENT = "missing argument to repetition operator"
ERR_TRAILING_BACKSLASH = "trailing backslash at end of expression"
ERR_DUPLICATE_NAMED_CAPTURE = "duplicate capture group name"
ERR_UNEXPECTED_PAREN = "regexp/syntax: internal error"  # RE2J's for a stray ')'
ERR_TOO_LARGE = "expression too large"

MAX_REPEAT = 1000  # RE2's limit on a counted repetition
MAX_STATES = 100_000

ASCII = frozenset(range(128))
_DIGITS = frozenset(range(ord("0"), ord("9") + 1))
_UPPER = frozenset(range(ord("A"), ord("Z") + 1))
_LOWER = frozenset(range(ord("a"), ord("z") + 1))
_WORD = _DIGITS | _UPPER | _LOWER | {ord("_")}
_SPACE = frozenset(map(ord, "\t\n\f\r "))
_PUNCT = frozenset(c for c in range(33, 127) if not chr(c).isalnum())

_PERL_CLASSES = {"d": _DIGITS, "s": _SPACE, "w": _WORD}
_POSIX_CLASSES = {
    "alnum": _DIGITS | _UPPER | _LOWER,
    "alpha": _UPPER | _LOWER,
    "ascii": ASCII,
    "blank": frozenset(map(ord, "\t ")),
    "cntrl": frozenset(range(32)) | {127},
    "digit": _DIGITS,
    "graph": frozenset(range(33, 127)),
    "lower": _LOWER,
    "print": frozenset(range(32, 127)),
    "punct": _PUNCT,
    "space": _SPACE | {11},
    "upper": _UPPER,
    "word": _WORD,
    "xdigit": _DIGITS | frozenset(map(ord, "ABCDEFabcdef")),
}
_CATEGORIES = frozenset(
    [
        "C",
        "Cc",
        "Cf",
        "Co",
        "Cs",
        "L",
        "Ll",
        "Lm",
        "Lo",
        "Lt",
        "Lu",
        "M",
        "Mc",
        "Me",
        "Mn",
        "N",
        "Nd",
        "Nl",
        "No",
        "P",
        "Pc",
        "Pd",
        "Pe",
        "Pf",
        "Pi",
        "Po",
        "Ps",
        "S",
        "Sc",
        "Sk",
        "Sm",
        "So",
        "Z",
        "Zl",
        "Zp",
        "Zs",
    ]
)
# RE2J 1.8's scripts (UnicodeTables.SCRIPTS); of ASCII, Latin has the letters and Common the rest.
_SCRIPTS = frozenset(
    [
        "Arabic",
        "Armenian",
        "Avestan",
        "Balinese",
        "Bamum",
        "Batak",
        "Bengali",
        "Bopomofo",
        "Brahmi",
        "Braille",
        "Buginese",
        "Buhid",
        "Canadian_Aboriginal",
        "Carian",
        "Cham",
        "Cherokee",
        "Common",
        "Coptic",
        "Cuneiform",
        "Cypriot",
        "Cyrillic",
        "Deseret",
        "Devanagari",
        "Egyptian_Hieroglyphs",
        "Ethiopic",
        "Georgian",
        "Glagolitic",
        "Gothic",
        "Greek",
        "Gujarati",
        "Gurmukhi",
        "Han",
        "Hangul",
        "Hanunoo",
        "Hebrew",
        "Hiragana",
        "Imperial_Aramaic",
        "Inherited",
        "Inscriptional_Pahlavi",
        "Inscriptional_Parthian",
        "Javanese",
        "Kaithi",
        "Kannada",
        "Katakana",
        "Kayah_Li",
        "Kharoshthi",
        "Khmer",
        "Lao",
        "Latin",
        "Lepcha",
        "Limbu",
        "Linear_B",
        "Lisu",
        "Lycian",
        "Lydian",
        "Malayalam",
        "Mandaic",
        "Meetei_Mayek",
        "Mongolian",
        "Myanmar",
        "New_Tai_Lue",
        "Nko",
        "Ogham",
        "Ol_Chiki",
        "Old_Italic",
        "Old_Persian",
        "Old_South_Arabian",
        "Old_Turkic",
        "Oriya",
        "Osmanya",
        "Phags_Pa",
        "Phoenician",
        "Rejang",
        "Runic",
        "Samaritan",
        "Saurashtra",
        "Shavian",
        "Sinhala",
        "Sundanese",
        "Syloti_Nagri",
        "Syriac",
        "Tagalog",
        "Tagbanwa",
        "Tai_Le",
        "Tai_Tham",
        "Tai_Viet",
        "Tamil",
        "Telugu",
        "Thaana",
        "Thai",
        "Tibetan",
        "Tifinagh",
        "Ugaritic",
        "Vai",
        "Yi",
    ]
)


class RegexSyntaxError(ValueError):
    """A pattern RE2J refuses; ``description`` is RE2J's (``PatternSyntaxException``)."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


def _unicode_class(name: str) -> frozenset[int] | None:
    """The ASCII members of a ``\\p`` class, or None for a name RE2J does not know."""
    if name == "Any":
        return ASCII
    if name in _CATEGORIES:
        return frozenset(c for c in ASCII if unicodedata.category(chr(c)).startswith(name))
    if name == "Latin":
        return _UPPER | _LOWER
    if name == "Common":
        return ASCII - _UPPER - _LOWER
    if name in _SCRIPTS:
        return frozenset()
    return None


def _fold(chars: frozenset[int]) -> frozenset[int]:
    return chars | {c ^ 0x20 for c in chars if c in _UPPER or c in _LOWER}


# -- the syntax tree ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Chars:
    """One character: the ASCII ones in ``ascii``; any non-ASCII one if ``beyond``."""

    ascii: frozenset[int]
    beyond: bool = False


@dataclass(frozen=True, slots=True)
class Concat:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Alternation:
    branches: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    sub: Node
    low: int
    high: int  # -1: unbounded


@dataclass(frozen=True, slots=True)
class Assertion:
    kind: str  # begin, end, word, nonword


Node = Chars | Concat | Alternation | Repeat | Assertion


@dataclass
class _Parser:
    text: str
    pos: int = 0
    fold: bool = False
    names: set[str] = field(default_factory=set)

    def more(self) -> bool:
        return self.pos < len(self.text)

    def peek(self) -> str:
        return self.text[self.pos]

    def looking_at(self, s: str) -> bool:
        return self.text.startswith(s, self.pos)

    # -- structure --------------------------------------------------------------------------

    def parse(self) -> Node:
        node = self.alternation(0)
        if self.more():  # a ')' without its '('
            raise RegexSyntaxError(ERR_UNEXPECTED_PAREN)
        return node

    def alternation(self, depth: int) -> Node:
        branches = [self.sequence(depth)]
        while self.more() and self.peek() == "|":
            self.pos += 1
            branches.append(self.sequence(depth))
        return branches[0] if len(branches) == 1 else Alternation(tuple(branches))

    def sequence(self, depth: int) -> Node:
        items: list[Node] = []
        last_repeat = False
        while self.more() and self.peek() not in "|)":
            c = self.peek()
            bounds = self.repeat_op() if c in "*+?{" else None
            if bounds is not None:
                if last_repeat:
                    raise RegexSyntaxError(ERR_INVALID_REPEAT_OP)
                if not items:
                    raise RegexSyntaxError(ERR_MISSING_REPEAT_ARGUMENT)
                if self.more() and self.peek() == "?":
                    self.pos += 1  # non-greedy: the same whole-name matches
                items[-1] = Repeat(items[-1], bounds[0], bounds[1])
                last_repeat = True
                continue
            last_repeat = False
            if c == "(":
                node = self.group(depth)
                if node is not None:
                    items.append(node)
            elif c == "[":
                items.append(self.char_class())
            elif c == "\\":
                items += self.escape()
            elif c == ".":
                self.pos += 1
                items.append(Chars(ASCII - {10}, True))
            elif c in "^$":
                self.pos += 1
                items.append(Assertion("begin" if c == "^" else "end"))
            else:
                self.pos += 1
                items.append(self.literal(ord(c)))
        return items[0] if len(items) == 1 else Concat(tuple(items))

    def repeat_op(self) -> tuple[int, int] | None:
        """The bounds of the repetition operator here; None: a ``{`` that is a literal."""
        c = self.peek()
        if c != "{":
            self.pos += 1
            return {"*": (0, -1), "+": (1, -1), "?": (0, 1)}[c]
        start = self.pos
        self.pos += 1
        low = self.integer()
        high = low
        if low is not None and self.more() and self.peek() == ",":
            self.pos += 1
            high = -1 if self.more() and self.peek() == "}" else self.integer()
        if low is None or high is None or not self.more() or self.peek() != "}":
            self.pos = start  # not a repetition: '{' is a literal
            return None
        self.pos += 1
        if low > MAX_REPEAT or high > MAX_REPEAT or (high >= 0 and low > high):
            raise RegexSyntaxError(ERR_INVALID_REPEAT_SIZE)
        return low, high

    def integer(self) -> int | None:
        start = self.pos
        while self.more() and self.peek().isascii() and self.peek().isdigit():
            self.pos += 1
        digits = self.text[start : self.pos]
        if not digits or (len(digits) > 1 and digits[0] == "0"):
            return None
        return MAX_REPEAT + 1 if len(digits) > 8 else int(digits)

    def group(self, depth: int) -> Node | None:
        """A group, or None for a flags-only ``(?flags)``."""
        saved = self.fold
        if self.looking_at("(?P<") or self.looking_at("(?<"):
            start = self.pos + (4 if self.looking_at("(?P<") else 3)
            end = self.text.find(">", start)
            if end < 0:
                raise RegexSyntaxError(ERR_INVALID_NAMED_CAPTURE)
            name = self.text[start:end]
            if not name or not all(ch == "_" or (ch.isascii() and ch.isalnum()) for ch in name):
                raise RegexSyntaxError(ERR_INVALID_NAMED_CAPTURE)
            if name in self.names:
                raise RegexSyntaxError(ERR_DUPLICATE_NAMED_CAPTURE)
            self.names.add(name)
            self.pos = end + 1
        elif self.looking_at("(?"):
            if self.flags():
                return None
        else:
            self.pos += 1
        node = self.alternation(depth + 1)
        if not self.more():
            raise RegexSyntaxError(ERR_MISSING_PAREN)
        self.pos += 1  # ')'
        self.fold = saved
        return node

    def flags(self) -> bool:
        """``(?flags)`` (True: it ends there) or ``(?flags:`` (False: a group follows)."""
        self.pos += 2
        fold, negated, saw_flag = self.fold, False, False
        while self.more():
            c = self.peek()
            self.pos += 1
            if c in "imsU":
                if c == "i":
                    fold = not negated
                saw_flag = True
            elif c == "-" and not negated:
                negated, saw_flag = True, False
            elif c in ":)":
                if negated and not saw_flag:
                    break
                self.fold = fold
                return c == ")"
            else:
                break
        raise RegexSyntaxError(ERR_INVALID_PERL_OP)

    # -- atoms ------------------------------------------------------------------------------

    def literal(self, code: int) -> Node:
        chars = frozenset({code}) if code < 128 else frozenset()
        return Chars(_fold(chars) if self.fold else chars)

    def escape(self) -> list[Node]:
        """An escape outside a class: an assertion, ``\\Q...\\E``, a class, or a character."""
        nxt = self.text[self.pos + 1 : self.pos + 2]
        if nxt in ("A", "z", "b", "B"):
            self.pos += 2
            kind = {"A": "begin", "z": "end", "b": "word", "B": "nonword"}[nxt]
            return [Assertion(kind)]
        if nxt == "C":
            raise RegexSyntaxError(ERR_INVALID_ESCAPE)
        if nxt == "Q":
            end = self.text.find("\\E", self.pos + 2)
            quoted = self.text[self.pos + 2 : len(self.text) if end < 0 else end]
            self.pos = len(self.text) if end < 0 else end + 2
            return [self.literal(ord(ch)) for ch in quoted]  # each its own atom
        chars = self.class_escape()
        if chars is not None:
            return [Chars(chars[0], chars[1])]
        return [self.literal(self.char_escape())]

    def class_escape(self) -> tuple[frozenset[int], bool] | None:
        """``\\d \\s \\w`` (and negations) or ``\\p``/``\\P``: (ASCII chars, matches non-ASCII)."""
        nxt = self.text[self.pos + 1 : self.pos + 2]
        if nxt.lower() in _PERL_CLASSES:
            self.pos += 2
            chars = _PERL_CLASSES[nxt.lower()]
            return (chars, False) if nxt.islower() else (ASCII - chars, True)
        if nxt not in ("p", "P"):
            return None
        negated = nxt == "P"
        self.pos += 2
        if not self.more():
            raise RegexSyntaxError(ERR_INVALID_CHAR_RANGE)
        if self.peek() == "{":
            end = self.text.find("}", self.pos)
            if end < 0:
                raise RegexSyntaxError(ERR_INVALID_CHAR_RANGE)
            name = self.text[self.pos + 1 : end]
            self.pos = end + 1
        else:
            name = self.peek()
            self.pos += 1
        if name.startswith("^"):
            negated, name = not negated, name[1:]
        members = _unicode_class(name)
        if members is None:
            raise RegexSyntaxError(ERR_INVALID_CHAR_RANGE)
        if self.fold:
            members = _fold(members)
        return (ASCII - members, True) if negated else (members, name == "Any")

    def char_escape(self) -> int:
        """A character written as an escape (RE2's parseEscape)."""
        self.pos += 1  # '\\'
        if not self.more():
            raise RegexSyntaxError(ERR_TRAILING_BACKSLASH)
        c = self.peek()
        self.pos += 1
        if (c in "1234567" and self.more() and self.peek() in "01234567") or c == "0":
            digits = c
            while len(digits) < 3 and self.more() and self.peek() in "01234567":
                digits += self.peek()
                self.pos += 1
            return int(digits, 8)
        if c == "x":
            return self.hex_escape()
        simple = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
        if c in simple:
            return simple[c]
        if not c.isascii() or not c.isalnum():
            return ord(c)
        raise RegexSyntaxError(ERR_INVALID_ESCAPE)

    def hex_escape(self) -> int:
        hexdigits = "0123456789abcdefABCDEF"
        if not self.more():
            raise RegexSyntaxError(ERR_INVALID_ESCAPE)
        if self.peek() == "{":
            end = self.text.find("}", self.pos)
            digits = self.text[self.pos + 1 : end] if end > 0 else ""
            if not digits or any(d not in hexdigits for d in digits) or int(digits, 16) > 0x10FFFF:
                raise RegexSyntaxError(ERR_INVALID_ESCAPE)
            self.pos = end + 1
            return int(digits, 16)
        digits = self.text[self.pos : self.pos + 2]
        if len(digits) < 2 or any(d not in hexdigits for d in digits):
            raise RegexSyntaxError(ERR_INVALID_ESCAPE)
        self.pos += 2
        return int(digits, 16)

    def char_class(self) -> Node:
        """``[...]`` (RE2's parseClass, Perl flags: '-' is a literal anywhere it cannot range)."""
        self.pos += 1
        negated = self.more() and self.peek() == "^"
        if negated:
            self.pos += 1
        chars: set[int] = set()
        beyond = False
        first = True
        while not self.more() or self.peek() != "]" or first:
            first = False
            if self.looking_at("[:"):
                end = self.text.find(":]", self.pos + 2)
                if end >= 0:
                    name = self.text[self.pos + 2 : end]
                    negate_posix = name.startswith("^")
                    posix = _POSIX_CLASSES.get(name.lstrip("^"))
                    if posix is None:
                        raise RegexSyntaxError(ERR_INVALID_CHAR_RANGE)
                    chars |= ASCII - posix if negate_posix else posix
                    beyond |= negate_posix
                    self.pos = end + 2
                    continue
            if self.looking_at("\\"):
                escaped = self.class_escape()
                if escaped is not None:
                    chars |= escaped[0]
                    beyond |= escaped[1]
                    continue
            low = self.class_char()
            high = low
            if self.more() and self.peek() == "-" and not self.looking_at("-]"):
                self.pos += 1
                high = self.class_char()
                if high < low:
                    raise RegexSyntaxError(ERR_INVALID_CHAR_RANGE)
            chars |= set(range(low, min(high, 127) + 1))
            beyond |= high >= 128
        self.pos += 1  # ']'
        members = _fold(frozenset(chars)) if self.fold else frozenset(chars)
        return Chars(ASCII - members, not beyond) if negated else Chars(members, beyond)

    def class_char(self) -> int:
        if not self.more():
            raise RegexSyntaxError(ERR_MISSING_BRACKET)
        if self.peek() == "\\":
            return self.char_escape()
        c = self.peek()
        self.pos += 1
        return ord(c)


# -- the automaton --------------------------------------------------------------------------------


@dataclass(slots=True)
class _State:
    """A state of the NFA: a character (``chars``, then ``out``), a split (``out`` or
    ``alt``), an assertion (``kind``, then ``out``) or the match (``kind == "match"``)."""

    kind: str
    chars: Chars | None = None
    out: int = -1
    alt: int = -1


class _Program:
    """A Thompson NFA built from the syntax tree."""

    def __init__(self) -> None:
        self.states: list[_State] = []

    def add(self, state: _State) -> int:
        if len(self.states) >= MAX_STATES:
            raise RegexSyntaxError(ERR_TOO_LARGE)
        self.states.append(state)
        return len(self.states) - 1

    def build(self, node: Node, out: int) -> int:
        """The entry of ``node``'s states, which continue to ``out``."""
        if isinstance(node, Chars):
            return self.add(_State("char", node, out))
        if isinstance(node, Assertion):
            return self.add(_State(node.kind, None, out))
        if isinstance(node, Concat):
            entry = out
            for item in reversed(node.items):
                entry = self.build(item, entry)
            return entry
        if isinstance(node, Alternation):
            branches = [self.build(b, out) for b in node.branches]
            entry = branches[-1]
            for b in reversed(branches[:-1]):
                entry = self.add(_State("split", None, b, entry))
            return entry
        entry = out
        if node.high < 0:
            loop = self.add(_State("split", None, -1, out))
            self.states[loop].out = self.build(node.sub, loop)
            entry = loop
        else:
            for _ in range(node.high - node.low):
                entry = self.add(_State("split", None, self.build(node.sub, entry), out))
                out = entry
        for _ in range(node.low):
            entry = self.build(node.sub, entry)
        return entry


def _is_word(text: str, i: int) -> bool:
    return 0 <= i < len(text) and ord(text[i]) in _WORD


# Where an empty-width assertion is checked: bits of at the start (1), at the end (2), a word
# character before (4), a word character after (8).
_START, _END, _WORD_BEFORE, _WORD_AFTER = 1, 2, 4, 8

#: The most cached state sets of one pattern (a lazy DFA); past it the cache starts again.
MAX_CACHED_SETS = 10_000


class Re2Pattern:
    """A compiled pattern: ``matches(name)`` is RE2J's ``matcher(name).matches()``.

    The NFA's state sets are numbered and their steps cached as they are met (a lazy DFA),
    so matching the many topic names of a resolution costs about one lookup per character.
    """

    def __init__(self, pattern: str, tree: Node) -> None:
        self.pattern = pattern
        self._program = _Program()
        self._match = self._program.add(_State("match"))
        self._start = self._program.build(tree, self._match)
        kinds = {state.kind for state in self._program.states}
        self._needs_end = "end" in kinds
        self._needs_words = bool(kinds & {"word", "nonword"})
        self._reset()

    def _reset(self) -> None:
        self._sets: list[frozenset[int]] = []
        self._accepting: list[bool] = []
        self._ids: dict[frozenset[int], int] = {}
        self._steps: dict[int, int] = {}  # (set id, character, position) -> set id
        self._starts: dict[int, int] = {}

    def _id(self, states: frozenset[int]) -> int:
        found = self._ids.get(states)
        if found is None:
            found = self._ids[states] = len(self._sets)
            self._sets.append(states)
            self._accepting.append(self._match in states)
        return found

    def _closure(self, entries: list[int], where: int) -> frozenset[int]:
        seen: set[int] = set()
        stack = list(entries)
        states = self._program.states
        while stack:
            s = stack.pop()
            if s in seen:
                continue
            seen.add(s)
            state = states[s]
            kind = state.kind
            if kind == "split":
                stack += [state.out, state.alt]
            elif kind in ("begin", "end", "word", "nonword"):
                if kind == "begin":
                    ok = bool(where & _START)
                elif kind == "end":
                    ok = bool(where & _END)
                else:
                    boundary = bool(where & _WORD_BEFORE) != bool(where & _WORD_AFTER)
                    ok = boundary if kind == "word" else not boundary
                if ok:
                    stack.append(state.out)
        return frozenset(seen)

    def _step(self, current: int, code: int, where: int) -> int:
        states = self._program.states
        nxt = []
        for s in self._sets[current]:
            chars = states[s].chars
            if chars is not None and (code in chars.ascii if code < 128 else chars.beyond):
                nxt.append(states[s].out)
        found = self._id(self._closure(nxt, where) if nxt else frozenset())
        self._steps[(current * 0x110000 + code) * 16 + where] = found
        return found

    def matches(self, text: str) -> bool:
        if len(self._sets) >= MAX_CACHED_SETS:
            self._reset()
        n = len(text)
        words = self._needs_words
        where = _START
        if n == 0 and self._needs_end:
            where |= _END
        if words and _is_word(text, 0):
            where |= _WORD_AFTER
        current = self._starts.get(where)
        if current is None:
            current = self._starts[where] = self._id(self._closure([self._start], where))
        steps = self._steps
        for i, ch in enumerate(text):
            code = ord(ch)
            where = 0
            if self._needs_end and i + 1 == n:
                where = _END
            if words:
                if code in _WORD:
                    where |= _WORD_BEFORE
                if _is_word(text, i + 1):
                    where |= _WORD_AFTER
            found = steps.get((current * 0x110000 + code) * 16 + where)
            current = self._step(current, code, where) if found is None else found
            if not self._sets[current]:
                return False
        return self._accepting[current]


def compile_re2(pattern: str) -> Re2Pattern:
    """``pattern`` compiled as RE2J would, or RegexSyntaxError with RE2J's description."""
    return Re2Pattern(pattern, _Parser(pattern).parse())
