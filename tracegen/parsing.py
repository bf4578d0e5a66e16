"""Pull a table or a program out of what a model actually wrote, and say how.

Real outputs wrap answers in prose and markdown fences, open with a ``<think>...</think>``
block, write JSON with single quotes, trailing commas or bare numbers, give several code blocks,
or stop mid-answer at the token limit. Every parse returns a ``Parsed`` with a status:

* ``ok``: the answer was found as written (taking it out of a fence or prose is not a repair);
* ``repaired``: it was found after a change, named in ``detail`` (e.g. "single quotes; numbers
  as strings", "cut off: kept 3 complete rows");
* ``failed``: nothing usable; ``value`` is None and ``detail`` says why.

Tables go through a small lenient reader rather than ``json.loads`` alone so that number cells
keep the digits the model wrote (``3.50`` stays ``"3.50"``) and each repair can be named.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .backends.base import Table


@dataclass(frozen=True)
class Parsed:
    value: Table | str | None
    status: str  # "ok" | "repaired" | "failed"
    detail: str  # how it was repaired or why it failed, short


_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)(?:```|\Z)", re.S)


def strip_thinking(text: str) -> tuple[str | None, str]:
    """Drop a reasoning block. Returns (answer text or None if cut off while thinking, note)."""
    if "</think>" in text:
        # Qwen templates often put the opening tag in the prompt: only the closing one appears.
        return text.rsplit("</think>", 1)[1], "after </think>"
    if "<think>" in text:
        return None, "cut off inside <think> block"
    return text, ""


def _fences(text: str) -> list[tuple[str, str, bool]]:
    """(language, body, closed) for each markdown fence, in order; the last may be unclosed."""
    out = []
    for m in _FENCE.finditer(text):
        closed = m.group(0).endswith("```")
        out.append((m.group(1).lower(), m.group(2), closed))
    return out


# ----------------------------------------------------------------------------- tables


class _Cut(Exception):
    """The text ended inside a value (an answer stopped at the token limit)."""


class _Bad(Exception):
    pass


class _Reader:
    """Recursive-descent reader for JSON-ish lists; records which liberties it took."""

    _NUM = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
    _WORDS = {"null": "", "None": "", "true": "true", "false": "false", "True": "True", "False": "False"}

    def __init__(self, s: str):
        self.s, self.i, self.notes = s, 0, set()

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def value(self):
        self.ws()
        if self.i >= len(self.s):
            raise _Cut
        c = self.s[self.i]
        if c == "[":
            return self.array()
        if c in "\"'":
            return self.string(c)
        m = self._NUM.match(self.s, self.i)
        if m:
            self.i = m.end()
            self.notes.add("numbers as strings")
            return m.group(0)
        for word, cell in self._WORDS.items():
            if self.s.startswith(word, self.i):
                self.i += len(word)
                self.notes.add("null/bool as strings")
                return cell
        raise _Bad(f"unexpected {c!r} at offset {self.i}")

    def string(self, quote):
        if quote == "'":
            self.notes.add("single quotes")
        j, buf = self.i + 1, []
        while j < len(self.s):
            c = self.s[j]
            if c == "\\" and j + 1 < len(self.s):
                buf.append(self.s[j : j + 2])
                j += 2
                continue
            if c == quote:
                self.i = j + 1
                raw = "".join(buf)
                try:  # reuse Python's escape handling for \n, \u00e9, \' ...
                    return ast.literal_eval(quote + raw + quote)
                except (ValueError, SyntaxError):
                    return raw
            buf.append(c)
            j += 1
        raise _Cut

    def array(self):
        self.i += 1
        items = []
        while True:
            self.ws()
            if self.i >= len(self.s):
                raise _Cut
            if self.s[self.i] == "]":
                self.i += 1
                return items
            items.append(self.value())
            self.ws()
            if self.i >= len(self.s):
                raise _Cut
            c = self.s[self.i]
            if c == ",":
                self.i += 1
                self.ws()
                if self.i < len(self.s) and self.s[self.i] == "]":
                    self.notes.add("trailing comma")
            elif c != "]":
                raise _Bad(f"expected ',' or ']' at offset {self.i}, found {c!r}")


def _as_table(value) -> Table | None:
    if not isinstance(value, list) or not all(isinstance(r, list) for r in value):
        return None
    if not all(isinstance(c, str) for r in value for c in r):
        return None  # nested lists inside cells
    return value


def _read_table(s: str) -> Parsed:
    """Read one table starting at s[0] == '['; cut-off tables keep their complete rows."""
    r = _Reader(s)
    try:
        table = _as_table(r.array())
    except _Bad as e:
        return Parsed(None, "failed", str(e))
    except _Cut:
        return _read_cut(s)
    if table is None:
        return Parsed(None, "failed", "not a list of rows of cells")
    notes = sorted(r.notes)
    return Parsed(table, "repaired" if notes else "ok", "; ".join(notes))


def _read_cut(s: str) -> Parsed:
    """The answer stopped mid-table: keep the rows that closed, drop the rest."""
    # first try closing what is there (the last row may be complete), then drop rows one by one
    heads = [s.rstrip().rstrip(",")] + [s[: m.end() - 1] for m in re.finditer(r"\]\s*,", s)][::-1]
    for head in heads:
        r = _Reader(head.rstrip().rstrip(",") + "]")
        try:
            table = _as_table(r.array())
        except (_Bad, _Cut):
            continue
        if table:
            return Parsed(table, "repaired", f"cut off: kept {len(table)} complete rows")
    return Parsed(None, "failed", "cut off before the first complete row")


def _candidates(text: str) -> list[tuple[str, str]]:
    """(where, text starting at '[') for fenced blocks first, then bare '[' in prose."""
    found = []
    for lang, body, _ in _fences(text):
        if lang in ("", "json", "python", "py", "text", "plaintext") and "[" in body:
            found.append((f"{lang or 'plain'} fence", body[body.index("[") :]))
    if not found:
        # the outermost '[' of each bracketed span in prose, in order
        for m in re.finditer(r"\[\s*\[", text):
            found.append(("prose", text[m.start() :]))
        if not found and "[" in text:
            found.append(("prose", text[text.index("[") :]))
    return found


_MD_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_MD_RULE = re.compile(r"^[\s|:-]+$")


def _markdown_table(text: str) -> Table | None:
    """The first pipe table in the text (``| a | b |`` lines), rule lines dropped."""
    rows, started = [], False
    for line in text.splitlines():
        m = _MD_ROW.match(line)
        if m:
            started = True
            if not _MD_RULE.match(line):
                rows.append([c.strip() for c in m.group(1).split("|")])
        elif started:
            break
    return rows or None


def parse_table(text: str) -> Parsed:
    """Find the output table in a direct answer: fenced blocks first, else tables in prose."""
    body, note = strip_thinking(text or "")
    if body is None:
        return Parsed(None, "failed", note)
    results = [(where, _read_table(s)) for where, s in _candidates(body)]
    if not results:
        md = _markdown_table(body)
        if md is not None:
            return Parsed(md, "repaired", "; ".join(x for x in (note, "markdown table read as rows") if x))
        return Parsed(None, "failed", "no JSON table found")
    # The last table that reads wins: a restated example comes before the answer, and an answer
    # cut off at the token limit is still the answer.
    for where, p in reversed(results):
        if p.status != "failed":
            detail = "; ".join(x for x in (where, note, p.detail) if x)
            return Parsed(p.value, p.status, detail)
    return Parsed(None, "failed", results[-1][1].detail)


# ----------------------------------------------------------------------------- code

_DEFINES = re.compile(r"^(?:async\s+)?def\s+transform\s*\(|^transform\s*=", re.M)
_CODE_START = re.compile(r"^(?:import |from \S+ import |def |class |@|[A-Za-z_][A-Za-z0-9_]* *=[^=])")


def _compiles(code: str) -> bool:
    try:
        compile(code, "<model>", "exec")
        return True
    except (SyntaxError, ValueError):
        return False


def _bare_code(text: str) -> str | None:
    """Code written without fences: from the code run holding ``def transform`` to the last line
    that still compiles, dropping prose before and after."""
    lines = text.splitlines()
    at = next((i for i, ln in enumerate(lines) if _DEFINES.match(ln)), None)
    if at is None:
        return None
    start = at
    while start > 0 and (_CODE_START.match(lines[start - 1]) or not lines[start - 1].strip()):
        start -= 1
    for end in range(len(lines), at, -1):
        code = "\n".join(lines[start:end]).strip("\n")
        if _compiles(code):
            return code
    return "\n".join(lines[start:]).strip("\n")


def parse_code(text: str) -> Parsed:
    """Find the ``transform`` program: the last fence that defines it, else bare code."""
    body, note = strip_thinking(text or "")
    if body is None:
        return Parsed(None, "failed", note)
    fences = [f for f in _fences(body) if f[0] in ("", "python", "py", "python3")]
    with_transform = [f for f in fences if _DEFINES.search(f[1])]
    if with_transform:
        lang, code, closed = with_transform[-1]
        code = code.rstrip()
        notes = [x for x in (note,) if x]
        if len(with_transform) > 1:
            notes.append(f"last of {len(with_transform)} blocks defining transform")
        if not closed:
            notes.append("unclosed fence (cut off?)")
            if not _compiles(code):
                notes.append("does not compile")
            return Parsed(code, "repaired", "; ".join(notes))
        return Parsed(code, "ok", "; ".join(["fence"] + notes))
    code = _bare_code(body)
    if code is not None:
        detail = "; ".join(x for x in ("bare code", note) if x)
        return Parsed(code, "ok" if _compiles(code) else "repaired", detail if _compiles(code) else detail + "; does not compile")
    if fences:
        names = sorted(set(re.findall(r"^def\s+(\w+)", "\n".join(f[1] for f in fences), re.M)))
        why = f"code defines {', '.join(names)} but no transform" if names else "code block has no transform function"
        return Parsed(None, "failed", why)
    return Parsed(None, "failed", "no code found")
