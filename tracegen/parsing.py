"""Pull a table or a program out of what a model actually wrote, and say how.

Real outputs wrap answers in prose and markdown fences, open with a ``<think>...</think>``
block, write JSON with single quotes, trailing commas or bare numbers, give several code blocks,
or stop mid-answer at the token limit. Every parse returns a ``Parsed`` with a status:

* ``ok``: the answer was found as written (taking it out of a fence or prose is not a repair);
* ``repaired``: it was found after a change, named in ``detail`` (e.g. "single quotes; numbers
  as strings", "cut off: kept 3 complete rows");
* ``failed``: nothing usable; ``value`` is None and ``detail`` says why;
* ``truncated_thinking``: the text ends inside an unclosed ``<think>`` block (cut off at the
  token limit while reasoning; backends prepend the tag when the chat template opened it in the
  prompt). ``value`` is None: drafts in the reasoning are never taken as the answer.

Choosing among several answers: a fence or table introduced as an alternative ("Alternatively",
"another way", ...) or as a restatement of the example ("Example output:", "the example input
...") loses to the main answer when there is one; a helper ``def``/``import``/constant from an
earlier fence that the chosen program uses is kept in front of it.

Wrappers (``Parsed.wrapper``, recorded as the direct answer's ``parse.wrapper``, schema v3): how
the chosen table was wrapped: ``none`` (the table alone), ``code_fence`` (in a fence, prose
around it or not), ``json_key`` (a JSON object holding the table under one key, e.g.
``{"output": [[...]]}``, bare or fenced: ``code_fence+json_key``), ``prose`` (text before the table),
``trailing_text`` (the table first, an explanation after it), ``markdown_table``. Never ambiguous:
when the answers left after dropping alternatives and restated examples hold two different
tables (or an object holds tables under two keys), the parse fails ("ambiguous") rather than
guess which one the model meant.

Tables go through a small lenient reader rather than ``json.loads`` alone so that number cells
keep the digits the model wrote (``3.50`` stays ``"3.50"``) and each repair can be named.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from .backends.base import Table


@dataclass(frozen=True)
class Parsed:
    value: Table | str | None
    status: str  # "ok" | "repaired" | "failed" | "truncated_thinking"
    detail: str  # how it was repaired or why it failed, short
    wrapper: str = field(default="", compare=False)  # tables: how the answer was wrapped (none, code_fence, json_key, ...); "" for code


# a fence may be indented (inside a numbered list); its body is dedented by the opening's indent
_FENCE = re.compile(r"^([ \t]*)```([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)(?:^[ \t]*```|\Z)", re.S | re.M)
TRUNCATED_THINKING = "truncated_thinking"
# prose right before an answer that marks it as an alternative or as the example restated
_ALTERNATIVE = re.compile(r"\b(alternative(ly)?|another (way|approach|version|option|solution)|or,? (you|we) "
                          r"(could|can)|a (shorter|simpler|more concise|one-line) (version|way)|one-liner)\b", re.I)
_RESTATED = re.compile(r"\b(example|given|original)\s+(input|output|table)\b|\bthe example\b", re.I)
_ANSWER_WORDS = re.compile(r"\b(new input|answer|result|therefore|so the output|final)\b", re.I)


def strip_thinking(text: str) -> tuple[str | None, str]:
    """Drop a reasoning block. Returns (answer text or None if cut off while thinking, note)."""
    if "</think>" in text:
        # Qwen templates often put the opening tag in the prompt: only the closing one appears.
        return text.rsplit("</think>", 1)[1], "after </think>"
    if "<think>" in text:
        return None, "cut off inside <think> block (no answer after the reasoning)"
    return text, ""


def _fences(text: str) -> list[tuple[str, str, bool, int]]:
    """(language, body, closed, start offset) for each markdown fence, in order; the last may be
    unclosed. Bodies of indented fences are dedented by the fence's own indent."""
    out = []
    for m in _FENCE.finditer(text):
        closed = bool(re.search(r"```[ \t]*$", m.group(0)))
        indent, body = m.group(1), m.group(3)
        if indent:
            body = "\n".join(ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in body.split("\n"))
        out.append((m.group(2).lower(), body, closed, m.start()))
    return out


def _lead(text: str, start: int, floor: int = 0) -> str:
    """The prose just before offset ``start`` (its last two non-empty lines, after ``floor``)."""
    lines = [ln for ln in text[floor:start].splitlines() if ln.strip()]
    return " ".join(lines[-2:])[-240:]


def _is_alternative(lead: str) -> bool:
    return bool(_ALTERNATIVE.search(lead))


def _is_restated(lead: str) -> bool:
    return bool(_RESTATED.search(lead)) and not _ANSWER_WORDS.search(lead)


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
                # JSON's "\/" is "/" (Python would keep the backslash)
                buf.append("/" if self.s[j + 1] == "/" else self.s[j : j + 2])
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


_ASSIGN = re.compile(r"^\s*(?:[A-Za-z_]\w*\s*(?::[^=]+)?=|return)\s*(?=\[)")


_JSON_KEY = re.compile(r"""^\{\s*(["'])(\w[\w \-]*)\1\s*:\s*(?=\[)""")
_ANY_KEY = re.compile(r"""[{,]\s*(["'])\w[\w \-]*\1\s*:\s*\[\s*\[""")


def _table_literal(body: str) -> str | None:
    """The text from the table's '[' when a fence holds a table literal (alone, as the value
    of a first-line assignment or return: ``result = [[...]]``, or of a JSON object's key), else
    None (the fence is code)."""
    stripped = body.lstrip()
    if stripped.startswith("["):
        return stripped
    m = _ASSIGN.match(stripped) or _JSON_KEY.match(stripped)
    return stripped[m.end():] if m else None


def _json_object_keys(text: str) -> int:
    """How many keys of a JSON object in ``text`` hold a table (``"k": [[``)."""
    return len(_ANY_KEY.findall(text))


def _candidates(text: str) -> list[tuple[str, str, str]]:
    """(where, text starting at '[', the prose leading to it) for fenced blocks first, then bare
    '[' in prose."""
    found = []
    prev_end = 0
    for lang, body, _, start in _fences(text):
        if lang in ("", "json", "python", "py", "text", "plaintext") and _table_literal(body) is not None:
            obj = "; json_key" if _JSON_KEY.match(body.lstrip()) else ""
            found.append((f"{lang or 'plain'} fence{obj}", _table_literal(body), _lead(text, start, prev_end)))
        prev_end = start + 3
    if not found:
        # prose only: a '[' inside a code block (``out = []``) is code, not an answer
        text = _FENCE.sub(lambda m: " " * len(m.group(0)), text)
        # the outermost '[' of each bracketed span in prose, in order; the lead is the sentence
        # before it on its own line (a restated example and the answer often share a paragraph)
        for m in re.finditer(r"\[\s*\[", text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            same_line = text[line_start : m.start()]
            lead = re.split(r"(?<=[.:!?])\s", same_line)[-1] if same_line.strip() else _lead(text, m.start())
            found.append(("prose", text[m.start() :], lead))
        if not found and "[" in text:
            found.append(("prose", text[text.index("[") :], _lead(text, text.index("["))))
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
    """Find the output table in a direct answer: fenced blocks first, else tables in prose, else
    a markdown pipe table."""
    body, note = strip_thinking(text or "")
    if body is None:
        return Parsed(None, TRUNCATED_THINKING, note)
    results = [(where, _read_table(s), lead) for where, s, lead in _candidates(body)]
    read = [(where, p, lead) for where, p, lead in results if p.status != "failed"]
    # An answer introduced as the example restated, or as an alternative, loses to one that is not.
    main = [x for x in read if not _is_restated(x[2]) and not _is_alternative(x[2])] or read
    if not main:
        md = _markdown_table(body)  # tried even when prose holds '[' that reads as no table
        if md is not None:
            return Parsed(md, "repaired", "; ".join(x for x in (note, "markdown table read as rows") if x),
                          "markdown_table")
    if not results:
        return Parsed(None, "failed", "no JSON table found")
    # The last table that reads wins: a restated example usually comes before the answer, and
    # an answer cut off at the token limit is still the answer.
    if main:
        distinct = {repr(p.value) for _, p, _ in main if "cut off" not in p.detail} or {repr(main[-1][1].value)}
        if len(distinct) > 1:
            return Parsed(None, "failed", f"ambiguous: {len(distinct)} different tables, none marked as the answer")
        if _json_object_keys(body) > 1:
            return Parsed(None, "failed", "ambiguous: a JSON object holds tables under several keys")
        where, p, _ = main[-1]
        detail = "; ".join(x for x in (where, note, p.detail) if x)
        return Parsed(p.value, p.status, detail, _wrapper(body, where))
    return Parsed(None, "failed", results[-1][1].detail)


def _wrapper(body: str, where: str) -> str:
    """How the chosen table was wrapped (module docstring)."""
    if "fence" in where:
        return "code_fence+json_key" if "json_key" in where else "code_fence"
    text = body.strip()
    m = _JSON_KEY.match(text)
    if m:
        return "json_key"
    start = text.find("[")
    r = _Reader(text[start:])
    try:
        r.array()
    except (_Bad, _Cut):
        return "prose" if start > 0 else "none"
    if start > 0:
        return "prose"
    return "trailing_text" if text[start + r.i:].strip() else "none"


# ----------------------------------------------------------------------------- code

_DEFINES = re.compile(r"^(?:async\s+)?def\s+transform\s*\(|^transform\s*=", re.M)


def _defines(entry: str) -> re.Pattern:
    """What defines the entry function (``transform`` unless a task names another)."""
    if entry == "transform":
        return _DEFINES
    name = re.escape(entry)
    return re.compile(rf"^(?:async\s+)?def\s+{name}\s*\(|^{name}\s*=", re.M)
_CODE_START = re.compile(r"^(?:import |from \S+ import |def |class |@|[A-Za-z_][A-Za-z0-9_]* *=[^=])")


def _compiles(code: str) -> bool:
    try:
        compile(code, "<model>", "exec")
        return True
    except (SyntaxError, ValueError):
        return False


def _bare_code(text: str, defines: re.Pattern = _DEFINES) -> str | None:
    """Code written without fences: from the code run holding ``def transform`` to the last line
    that still compiles, dropping prose before and after."""
    lines = text.splitlines()
    at = next((i for i, ln in enumerate(lines) if defines.match(ln)), None)
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


def _defined(tree: ast.Module) -> dict[str, ast.stmt]:
    """Top-level names a module defines (imports, defs, classes, plain assignments) -> statement."""
    out: dict[str, ast.stmt] = {}
    for st in tree.body:
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            for a in st.names:
                out[(a.asname or a.name).split(".")[0]] = st
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[st.name] = st
        elif isinstance(st, ast.Assign):
            for t in st.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = st
    return out


def _free_names(tree: ast.AST, defined) -> set[str]:
    import builtins

    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    local |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
              for a in n.args + n.kwonlyargs + n.posonlyargs + [x for x in (n.vararg, n.kwarg) if x]}
    local |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    local |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
              for a in n.names}
    return used - local - set(defined) - set(dir(builtins))


def _helpers(code: str, earlier: list[str]) -> list[str]:
    """Source of the imports, functions and constants from earlier fences that ``code`` uses but
    does not define itself (a model that wrote its helper in its own block), in their order."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    pool: dict[str, tuple[int, int, str]] = {}  # name -> (fence, line, source), the latest wins
    for k, body in enumerate(earlier):
        try:
            mod = ast.parse(body)
        except SyntaxError:
            continue
        for name, st in _defined(mod).items():
            pool[name] = (k, st.lineno, ast.get_source_segment(body, st) or "")
    need, taken = _free_names(tree, _defined(tree)), {}
    while need:
        found = {n: pool[n] for n in need if n in pool and n not in taken}
        if not found:
            break
        taken.update(found)
        need = set()
        for _, _, src in found.values():
            try:
                need |= _free_names(ast.parse(src), {}) - set(taken)
            except SyntaxError:
                pass
    return list(dict.fromkeys(src for _, _, src in sorted(taken.values())))


def parse_code(text: str, entry: str = "transform") -> Parsed:
    """Find the ``transform`` program (``entry``: the function a task's programs define): the last
    fence that defines it (an alternative loses to the main answer), with the helpers it uses from
    earlier fences; else bare code."""
    defines = _defines(entry)
    body, note = strip_thinking(text or "")
    if body is None:
        return Parsed(None, TRUNCATED_THINKING, note)
    fences = [f for f in _fences(body) if f[0] in ("", "python", "py", "python3")]
    with_transform = [f for f in fences if defines.search(f[1])]
    if with_transform:
        leads, prev = {}, 0
        for f in fences:
            leads[f[3]] = _lead(body, f[3], prev)
            prev = f[3] + 3
        main = [f for f in with_transform if not _is_alternative(leads[f[3]])] or with_transform
        lang, code, closed, start = main[-1]
        code = code.rstrip()
        notes = [x for x in (note,) if x]
        if len(with_transform) > 1:
            notes.append(f"{'last' if main[-1] is with_transform[-1] else 'main'} of {len(with_transform)} blocks defining {entry}")
        helpers = _helpers(code, [f[1] for f in fences if f[3] < start])
        if helpers:
            code = "\n\n".join(helpers + [code])
            notes.append(f"kept {len(helpers)} helper(s) from an earlier block")
        if not closed:
            notes.append("unclosed fence (cut off?)")
            if not _compiles(code):
                notes.append("does not compile")
            return Parsed(code, "repaired", "; ".join(notes))
        return Parsed(code, "ok", "; ".join(["fence"] + notes))
    code = _bare_code(body, defines)
    if code is not None:
        detail = "; ".join(x for x in ("bare code", note) if x)
        return Parsed(code, "ok" if _compiles(code) else "repaired", detail if _compiles(code) else detail + "; does not compile")
    if fences:
        names = sorted(set(re.findall(r"^def\s+(\w+)", "\n".join(f[1] for f in fences), re.M)))
        why = f"code defines {', '.join(names)} but no {entry}" if names else f"code block has no {entry} function"
        return Parsed(None, "failed", why)
    return Parsed(None, "failed", "no code found")
