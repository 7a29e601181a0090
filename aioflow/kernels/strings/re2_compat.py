"""RE2 semantics on Python's `re`: what TF's regex kernels (RegexReplace, StaticRegexReplace,
RegexFullMatch, StaticRegexFullMatch) need.

TF compiles patterns with RE2 (UTF-8 mode, Perl classes, leftmost-first matching) and
rewrites with RE2::Replace / RE2::GlobalReplace. Python's `re` differs in syntax and in
semantics, so a pattern is parsed here with RE2's grammar and written out as a Python
pattern that means the same on the string decoded from UTF-8 with ``surrogateescape``
(each byte of invalid UTF-8 is one lone surrogate U+DC80..U+DCFF, which nothing but
``\\C`` matches, as RE2's UTF-8 automata match no invalid byte).

Translated (RE2 -> Python):

- ``\\d \\w \\s \\b \\B`` are ASCII in RE2 (``\\s`` is ``[\\t\\n\\f\\r ]``, no ``\\v``):
  written as explicit ASCII classes / lookarounds (Python's are Unicode);
- ``$`` without ``(?m)`` is the end of the text in RE2 (Python's ``$`` also matches
  before a final newline): written ``\\Z``; ``\\z`` -> ``\\Z``;
- ``.`` and negated classes never match an invalid byte (see above);
- POSIX classes ``[[:alpha:]]`` ... and ``\\pL`` / ``\\p{Lu}`` / ``\\PN`` (Unicode general
  categories) become explicit ranges; ``\\Q...\\E`` is quoted; ``\\x{10FFFF}`` and octal
  ``\\0``/``\\123`` become the characters; ``\\C`` is any character;
- ``(?P<name>...)`` becomes a plain group (RE2 rewrites only know ``\\N``, and RE2
  accepts names Python refuses, such as ``1a``);
- flags ``(?imsU)`` in the middle of a group apply to the rest of the group (Python
  refuses global flags not at the start): written as scoped ``(?i:...)`` groups, closed
  and reopened around ``|``; ``U`` (ungreedy) swaps greedy and lazy repetitions;
- ``{,n}`` and other braces that are not RE2 repetitions are literal (Python reads
  ``{,n}`` as a repetition); ``^*`` (a repeated empty-width assertion) is grouped.

Refused with RE2's own words, as TF's ``Invalid pattern: <p>, error: <RE2 error>``:
lookarounds ``(?=`` ``(?!`` ``(?<=`` ``(?<!`` and ``(?<name>`` ("invalid perl operator"),
back-references ``\\1`` and unknown escapes such as ``\\Z`` ("invalid escape sequence"),
possessive or doubled repetitions ``a++`` ``a**`` ("bad repetition operator"), a
repetition of nothing ("no argument for repetition operator"), sizes over 1000 or
``{2,1}`` ("invalid repetition size"), reversed ranges and unknown POSIX classes
("invalid character class range"), unbalanced parentheses and brackets ("missing )",
"unexpected )", "missing ]"). Refused although RE2 accepts them (they cannot be
translated): script names in ``\\p{Greek}`` and a negated POSIX class inside a larger
class (``[[:^alpha:]x]``), reported as "invalid character class range".

Rewrites follow RE2::Rewrite: ``\\0``..``\\9`` are groups, ``\\\\`` a backslash, anything
else after a backslash is an invalid rewrite: RE2::Replace then leaves the string as it
is, RE2::GlobalReplace writes the rewrite up to the bad escape (what TF does). A rewrite
naming a group the pattern lacks changes nothing. In a global replacement an empty match
right where the previous match ended is skipped (RE2's rule; Python's ``re.sub`` takes
it), e.g. ``x*`` -> ``-`` on "abxd" gives "-a-b-d-" (Python: "-a-b--d-").
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

_ESC_SURR = "\udc80-\udcff"
_WORD = "0-9A-Za-z_"
_SPACE = "\\t\\n\\f\\r "
_PERL = {"d": ("0-9", False), "D": ("0-9", True), "w": (_WORD, False), "W": (_WORD, True),
         "s": (_SPACE, False), "S": (_SPACE, True)}
_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z",
    "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z",
    "word": _WORD, "xdigit": "0-9A-Fa-f",
}
_CONTROL = {"a": "\a", "f": "\f", "t": "\t", "n": "\n", "r": "\r", "v": "\v"}
_B = f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))"
_NB = f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))"
_MAX_REPEAT = 1000


class Re2Error(ValueError):
    """A pattern RE2 refuses (or that cannot be translated); the text is RE2's error."""


def _class_escape(ch: str) -> str:
    if ch in "\\]^-[&~|" or not ch.isprintable():
        return f"\\U{ord(ch):08x}" if ord(ch) > 0xFFFF else f"\\u{ord(ch):04x}" \
            if ord(ch) > 0xFF else f"\\x{ord(ch):02x}"
    return ch


@functools.cache
def _category_ranges(name: str) -> str | None:
    """A Python class body of the code points of Unicode general category `name` (one
    letter for the major class, two for a subcategory, or "Any"); None if unknown."""
    if name == "Any":
        return "\\x00-\\ud7ff\\ue000-\\U0010ffff"
    if not (len(name) in (1, 2) and name[0] in "LMNPSZC"):
        return None
    ranges: list[tuple[int, int]] = []
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        if unicodedata.category(chr(cp)).startswith(name):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    if not ranges:
        return None
    return "".join(_class_escape(chr(a)) if a == b else
                   f"{_class_escape(chr(a))}-{_class_escape(chr(b))}" for a, b in ranges)


class _Frame:
    """One open group: its flags (RE2's i, m, s, U), the flags it opened with, and how
    many scoped-flag wrappers `(?i:` it has open."""

    __slots__ = ("flags", "initial", "wraps", "opened_at")

    def __init__(self, flags: frozenset, opened_at: int = 0):
        self.flags = flags
        self.initial = flags
        self.wraps = 0
        self.opened_at = opened_at  # index in out of the group's opening piece


def _py_flags(flags: frozenset) -> str:
    on = "".join(f for f in "ims" if f in flags)
    off = "".join(f for f in "ims" if f not in flags)
    return f"(?{on}-{off}:" if off else f"(?{on}:"


class _Translator:
    def __init__(self, pattern: str):
        self.p = pattern
        self.i = 0
        self.out: list[str] = []
        self.groups = 0
        self.stack = [_Frame(frozenset())]
        self.last_atom: int | None = None   # index in out of the last repeatable atom
        self.last_was_repeat = False
        self.repeat_start = 0

    # -- errors --------------------------------------------------------------------------
    def fail(self, text: str):
        raise Re2Error(text)

    # -- the main loop -------------------------------------------------------------------
    def translate(self) -> str:
        p = self.p
        while self.i < len(p):
            c = p[self.i]
            if c == "\\":
                self.escape()
            elif c == "[":
                self.atom(self.char_class())
            elif c == "(":
                self.open_group()
            elif c == ")":
                self.close_group()
            elif c == "|":
                self.i += 1
                frame = self.stack[-1]
                self.out.append(")" * frame.wraps + "|")
                frame.wraps = 0
                if frame.flags != frame.initial:
                    self.out.append(_py_flags(frame.flags))
                    frame.wraps = 1
                self.last_atom = None
                self.last_was_repeat = False
            elif c in "*+?":
                self.repeat(c, 1)
            elif c == "{" and self.brace_repeat():
                pass
            elif c == ".":
                self.i += 1
                nl = "" if "s" in self.stack[-1].flags else "\\n"
                self.atom(f"[^{nl}{_ESC_SURR}]")
            elif c == "^":
                self.i += 1
                self.atom("^")
            elif c == "$":
                self.i += 1
                self.atom("$" if "m" in self.stack[-1].flags else "\\Z")
            else:
                self.i += 1
                self.atom(re.escape(c))
        if len(self.stack) > 1:
            self.fail(f"missing ): {p}")
        self.out.append(")" * self.stack[0].wraps)
        return "".join(self.out)

    def atom(self, text: str) -> None:
        self.last_atom = len(self.out)
        self.last_was_repeat = False
        self.out.append(text)

    # -- repetition ----------------------------------------------------------------------
    def repeat(self, op: str, length: int) -> None:
        start = self.i
        self.i += length
        lazy = self.i < len(self.p) and self.p[self.i] == "?"
        if lazy:
            self.i += 1
        if self.last_was_repeat:
            self.fail(f"bad repetition operator: {self.p[self.repeat_start:self.i]}")
        if self.last_atom is None:
            self.fail(f"no argument for repetition operator: {self.p[start:self.i]}")
        atom = "".join(self.out[self.last_atom:])
        del self.out[self.last_atom:]
        if atom in ("^", "$", "\\Z", "\\A", _B, _NB):
            atom = f"(?:{atom})"
        if "U" in self.stack[-1].flags:
            lazy = not lazy
        self.out.append(atom + op + ("?" if lazy else ""))
        self.last_was_repeat = True
        self.repeat_start = start

    def brace_repeat(self) -> bool:
        m = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.p, self.i)
        if m is None:
            self.i += 1
            self.atom("\\{")
            return True
        lo = int(m.group(1))
        hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else -1)
        if lo > _MAX_REPEAT or hi > _MAX_REPEAT or (hi >= 0 and hi < lo):
            self.fail(f"invalid repetition size: {m.group(0)}")
        op = f"{{{lo}}}" if m.group(2) is None else f"{{{lo},{'' if hi < 0 else hi}}}"
        self.repeat(op, len(m.group(0)))
        return True

    # -- groups --------------------------------------------------------------------------
    def open_group(self) -> None:
        p, start = self.p, self.i
        frame = self.stack[-1]
        if not p.startswith("(?", start):
            self.i += 1
            self.groups += 1
            self.stack.append(_Frame(frame.flags, len(self.out)))
            self.out.append("(")
            self.last_atom = None
            self.last_was_repeat = False
            return
        if p.startswith("(?P<", start):
            end = p.find(">", start + 4)
            name = p[start + 4:end] if end >= 0 else ""
            if end < 0 or not re.fullmatch(r"\w+", name, re.ASCII):
                self.fail(f"invalid named capture group: {p[start:end + 1 if end >= 0 else None]}")
            self.i = end + 1
            self.groups += 1
            self.stack.append(_Frame(frame.flags, len(self.out)))
            self.out.append("(")
            self.last_atom = None
            self.last_was_repeat = False
            return
        # (?flags) or (?flags:...)
        t = start + 2
        flags = set(frame.flags)
        negated = sawflag = False
        while True:
            if t >= len(p):
                self.fail(f"invalid perl operator: {p[start:t]}")
            c = p[t]
            t += 1
            if c == "-":
                if negated:
                    self.fail(f"invalid perl operator: {p[start:t]}")
                negated, sawflag = True, False
            elif c in "imsU":
                sawflag = True
                (flags.discard if negated else flags.add)(c)
            elif c in ":)":
                if negated and not sawflag:
                    self.fail(f"invalid perl operator: {p[start:t]}")
                break
            else:
                self.fail(f"invalid perl operator: {p[start:t]}")
        self.i = t
        new = frozenset(flags)
        if c == ":":
            self.stack.append(_Frame(new, len(self.out)))
            self.out.append(_py_flags(new))
            self.last_atom = None
            self.last_was_repeat = False
        else:
            frame.flags = new
            self.out.append(_py_flags(new))
            frame.wraps += 1
            self.last_atom = None
            self.last_was_repeat = False

    def close_group(self) -> None:
        if len(self.stack) == 1:
            self.fail(f"unexpected ): {self.p}")
        self.i += 1
        frame = self.stack.pop()
        self.out.append(")" * frame.wraps + ")")
        self.last_atom = frame.opened_at  # the whole group is one atom
        self.last_was_repeat = False

    # -- escapes -------------------------------------------------------------------------
    def escape_char(self, in_class: bool) -> tuple[str, str | None]:
        """Parse one escape at self.i. Returns ("char", c), ("class", body) /
        ("nclass", body) for a (negated) class, or ("raw", python text)."""
        p, start = self.p, self.i
        if start + 1 >= len(p):
            self.fail("trailing \\")
        c = p[start + 1]
        self.i = start + 2
        if c in "1234567" and not (self.i < len(p) and p[self.i] in "01234567"):
            self.fail(f"invalid escape sequence: {p[start:self.i]}")
        if c in "01234567":
            end = self.i
            limit = start + 4
            while end < len(p) and end < limit and p[end] in "01234567":
                end += 1
            self.i = end
            return "char", chr(int(p[start + 1:end], 8))
        if c == "x":
            if self.i < len(p) and p[self.i] == "{":
                end = p.find("}", self.i)
                digits = p[self.i + 1:end] if end >= 0 else ""
                if end < 0 or not re.fullmatch(r"[0-9A-Fa-f]+", digits):
                    self.fail(f"invalid escape sequence: {p[start:end + 1 if end >= 0 else None]}")
                if int(digits, 16) > 0x10FFFF:
                    self.fail(f"invalid escape sequence: {p[start:end]}")
                self.i = end + 1
                return "char", chr(int(digits, 16))
            digits = p[self.i:self.i + 2]
            if not re.fullmatch(r"[0-9A-Fa-f]{2}", digits):
                self.fail(f"invalid escape sequence: {p[start:self.i + len(digits)]}")
            self.i += 2
            return "char", chr(int(digits, 16))
        if c in _CONTROL:
            return "char", _CONTROL[c]
        if c in _PERL:
            body, neg = _PERL[c]
            return ("nclass" if neg else "class"), body
        if c in "pP":
            neg = c == "P"
            if self.i < len(p) and p[self.i] == "{":
                end = p.find("}", self.i)
                if end < 0:
                    self.fail(f"invalid character class range: {p[start:]}")
                name = p[self.i + 1:end]
                self.i = end + 1
            elif self.i < len(p):
                name = p[self.i]
                self.i += 1
            else:
                self.fail("invalid character class range: " + p[start:])
            if name.startswith("^"):
                neg, name = not neg, name[1:]
            body = _category_ranges(name)
            if body is None:
                self.fail(f"invalid character class range: {p[start:self.i]}")
            return ("nclass" if neg else "class"), body
        if not in_class:
            if c == "b":
                return "raw", _B
            if c == "B":
                return "raw", _NB
            if c == "A":
                return "raw", "\\A"
            if c == "z":
                return "raw", "\\Z"
            if c == "C":
                return "raw", "(?s:.)"
        if ord(c) < 0x80 and not c.isalnum():
            return "char", c
        self.fail(f"invalid escape sequence: {p[start:self.i]}")
        raise AssertionError  # unreachable

    def escape(self) -> None:
        p = self.p
        if p.startswith("\\Q", self.i):
            end = p.find("\\E", self.i + 2)
            text = p[self.i + 2:] if end < 0 else p[self.i + 2:end]
            self.i = len(p) if end < 0 else end + 2
            for ch in text:
                self.atom(re.escape(ch))
            return
        kind, value = self.escape_char(in_class=False)
        if kind == "char":
            self.atom(re.escape(value))
        elif kind == "class":
            self.atom(f"[{value}]")
        elif kind == "nclass":
            self.atom(f"[^{value}{_ESC_SURR}]")
        else:
            self.atom(value)

    # -- character classes ---------------------------------------------------------------
    def char_class(self) -> str:
        p, start = self.p, self.i
        self.i += 1
        negated = self.i < len(p) and p[self.i] == "^"
        if negated:
            self.i += 1
        pos: list[str] = []   # class-body pieces
        negs: list[str] = []  # bodies of negated classes inside (\D, \PL, [:^alpha:])
        first = True
        while True:
            if self.i >= len(p):
                self.fail(f"missing ]: {p[start:]}")
            c = p[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "[" and p.startswith("[:", self.i):
                end = p.find(":]", self.i + 2)
                if end >= 0:
                    name = p[self.i + 2:end]
                    neg = name.startswith("^")
                    body = _POSIX.get(name[1:] if neg else name)
                    if body is None:
                        self.fail(f"invalid character class range: {p[self.i:end + 2]}")
                    self.i = end + 2
                    (negs if neg else pos).append(body)
                    continue
            lo_start = self.i
            kind, value = self.class_char()
            if kind in ("class", "nclass"):
                (negs if kind == "nclass" else pos).append(value)
                continue
            if p.startswith("-", self.i) and self.i + 1 < len(p) and p[self.i + 1] != "]":
                self.i += 1
                hi_start = self.i
                hi = self.class_char()
                if hi[0] != "char":
                    self.fail(f"invalid escape sequence: {p[hi_start:self.i]}")
                if ord(hi[1]) < ord(value):
                    self.fail(f"invalid character class range: {p[lo_start:self.i]}")
                pos.append(f"{_class_escape(value)}-{_class_escape(hi[1])}")
            else:
                pos.append(_class_escape(value))
        body = "".join(pos)
        if not negs:
            return f"[^{body}{_ESC_SURR}]" if negated else f"[{body}]"
        if negated:
            # not (P or not N1 or ...) = not P and N1 and ...
            parts = [f"(?![{body}])"] if body else []
            parts += [f"(?=[{n}])" for n in negs[:-1]]
            return "(?:" + "".join(parts) + f"[{negs[-1]}])"
        alts = ([f"[{body}]"] if body else []) + [f"[^{n}{_ESC_SURR}]" for n in negs]
        return "(?:" + "|".join(alts) + ")"

    def class_char(self):
        p = self.p
        c = p[self.i]
        if c == "\\":
            return self.escape_char(in_class=True)
        self.i += 1
        return "char", c


@functools.lru_cache(maxsize=256)
def compile_re2(pattern: bytes) -> tuple[re.Pattern, int]:
    """The Python pattern meaning what RE2 means by `pattern`, and its number of
    capturing groups; Re2Error (RE2's error text) if RE2 refuses it or it cannot be
    translated."""
    try:
        text = pattern.decode("utf-8")
    except UnicodeDecodeError:
        raise Re2Error("invalid UTF-8") from None
    t = _Translator(text)
    py = t.translate()
    try:
        return re.compile(py), t.groups
    except re.error as e:  # a translation gap: report it in RE2's terms
        raise Re2Error(f"invalid perl operator: {e}") from None


def to_text(s: bytes) -> str:
    return s.decode("utf-8", "surrogateescape")


def to_bytes(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def parse_rewrite(rewrite: bytes) -> tuple[list, bool, int]:
    """RE2::Rewrite's reading of `rewrite`: the parts (str literals, int groups) up to the
    first invalid escape, whether there was none, and the highest group it names
    (RE2's MaxSubmatch, which reads the whole rewrite)."""
    text = to_text(rewrite)
    parts: list = []
    literal: list[str] = []
    ok = True
    max_group = 0
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            literal.append(c)
            i += 1
            continue
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if nxt.isdigit() and nxt.isascii():
            max_group = max(max_group, int(nxt))
            if ok:
                if literal:
                    parts.append("".join(literal))
                    literal = []
                parts.append(int(nxt))
            i += 2
        elif nxt == "\\":
            if ok:
                literal.append("\\")
            i += 2
        else:
            if ok:
                ok = False
                if literal:
                    parts.append("".join(literal))
                    literal = []
            i += 1
        if not ok:
            literal = []
    if ok and literal:
        parts.append("".join(literal))
    return parts, ok, max_group


def _expand(parts: list, m: re.Match) -> str:
    return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts)


def replace(compiled: re.Pattern, groups: int, rewrite, s: bytes, global_: bool) -> bytes:
    """RE2::GlobalReplace (global_) or RE2::Replace of `s`, `rewrite` from parse_rewrite."""
    parts, ok, max_group = rewrite
    if max_group > groups:
        return s
    text = to_text(s)
    if not global_:
        m = compiled.search(text)
        if m is None or not ok:
            return s
        return to_bytes(text[:m.start()] + _expand(parts, m) + text[m.end():])
    out: list[str] = []
    p, n, lastend, count = 0, len(text), -1, 0
    while p <= n:
        m = compiled.search(text, p)
        if m is None:
            break
        if p < m.start():
            out.append(text[p:m.start()])
        if m.start() == lastend and m.start() == m.end():
            # RE2: no empty match where the last one ended; step over one character.
            if p < n:
                out.append(text[p])
            p += 1
            continue
        out.append(_expand(parts, m))
        p = lastend = m.end()
        count += 1
    if count == 0:
        return s
    if p < n:
        out.append(text[p:])
    return to_bytes("".join(out))


def full_match(compiled: re.Pattern, s: bytes) -> bool:
    return compiled.fullmatch(to_text(s)) is not None
