"""Command-line flags derived from the config dataclasses (TRL's ``HfArgumentParser`` pattern).

Every field with ``metadata["help"]`` is a flag: ``--`` + its name with ``-`` for ``_``, or its
``metadata["flag"]`` alias (``batch_size`` of ``BackendConfig`` is ``--gen-batch-size``). Fields
with the same flag share it (``--seed`` sets ``backend.seed`` and ``experiment.seed``); a field
whose default is a dataclass is a section whose fields are flags in turn. ``metadata["cli"] =
False`` keeps a field off the command line. Kinds follow the annotation: a bool that defaults to
False is a switch, one that defaults to True a ``--no-...`` switch; ``tuple[float, ...]`` takes
``A,B,C`` (``none``: empty) and a repeated flag appends; a str with ``metadata["repeat"]`` joins
repeated values with it (``--base-url A --base-url B``); ``metadata["words"]`` names values of an
int or float flag by words (``--sft-max-tokens auto`` is 0). ``BackendConfig.extra`` keys come from its
``metadata["options"]``. ``--config FILE`` (TOML) sets any flag by its name without the dashes
(``max_repairs = 1``); a flag on the command line wins. ``flag_of`` maps a field path to its flag:
error messages name fields and the command line shows them as flags.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import typing
from pathlib import Path

from tracegen.errors import ConfigError


@dataclasses.dataclass
class Flag:
    name: str
    paths: list[str]
    kind: type  # bool, int, float, str or tuple
    elem: type = str  # a tuple's items
    default: object = None
    help: str = ""
    negate: bool = False  # a --no-... switch of a field that defaults to True
    repeat: str | None = None
    choices: tuple | None = None
    metavar: str | None = None
    words: dict | None = None  # words that stand for a value (``{"auto": 0}``), for an int or float flag

    @property
    def dest(self) -> str:
        return self.name[2:].replace("-", "_")


def _kind(hint) -> tuple[type, type]:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        hint = args[0]
        args = list(typing.get_args(hint))
    if typing.get_origin(hint) is tuple or hint is tuple:
        return tuple, (args[0] if args else str)
    return hint, str


def _walk(cls, prefix: str = ""):
    """(path, field, hint) of every leaf field; a field whose default is a dataclass is walked into."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        path = f"{prefix}{f.name}"
        sub = f.default_factory if f.default_factory is not dataclasses.MISSING else None
        if dataclasses.is_dataclass(sub):
            yield from _walk(sub, path + ".")
        else:
            yield path, f, hints[f.name]


def flags(root_cls) -> dict[str, Flag]:
    """Flag name -> Flag, in field order; two fields of one flag must agree on kind and default."""
    out: dict[str, Flag] = {}

    def add(flag: Flag) -> None:
        old = out.get(flag.name)
        if old is None:
            out[flag.name] = flag
        elif (old.kind, old.default, old.negate) != (flag.kind, flag.default, flag.negate):
            raise TypeError(f"{flag.paths[0]} and {old.paths[0]} both want {flag.name} with other kinds or "
                            f"defaults: give one of them metadata={{'flag': '--other-name'}}")
        else:
            old.paths += flag.paths

    for path, f, hint in _walk(root_cls):
        meta = f.metadata
        for key, (typ, name, text) in meta.get("options", {}).items():  # keys of a dict field
            add(Flag(name, [f"{path}.{key}"], typ, help=text))
        if "help" not in meta or meta.get("cli") is False or "options" in meta:
            continue
        kind, elem = _kind(hint)
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        negate = kind is bool and default is True
        name = meta.get("flag") or ("--no-" if negate else "--") + f.name.replace("_", "-")
        add(Flag(name, [path], kind, elem, default, meta["help"], negate, meta.get("repeat"),
                 _choices(meta.get("choices")), meta.get("metavar"), meta.get("words")))
    return out


def _choices(choices) -> tuple | None:
    """A field's ``choices``: a tuple, or a callable that reads a registry when the flags are built."""
    return tuple(choices()) if callable(choices) else choices


def _parse(flag: Flag, text: str):
    """A command-line word as the flag's kind; ArgumentTypeError names what was expected."""
    if flag.kind is tuple:
        if text.strip().lower() in ("none", ""):
            return ()
        return tuple(_parse(dataclasses.replace(flag, kind=flag.elem), w.strip()) for w in text.split(","))
    if flag.words and text.strip().lower() in flag.words:
        return flag.words[text.strip().lower()]
    try:
        value = flag.kind(text)
    except ValueError:
        also = "".join(f" or {w}" for w in flag.words or ())
        raise argparse.ArgumentTypeError(f"expected {'an integer' if flag.kind is int else 'a number'}{also}, "
                                         f"got {text!r}") from None
    if flag.kind is float and not math.isfinite(value):  # nan passes no range check, inf every one
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


class _Collect(argparse.Action):
    """First use replaces the default (from the field or the config file), later uses append."""

    def __call__(self, parser, ns, value, option_string=None):
        seen = ns.__dict__.setdefault("_given", set())
        old = getattr(ns, self.dest)
        if self.dest in seen:
            value = old + value if isinstance(value, tuple) else f"{old}{self.const}{value}"
        seen.add(self.dest)
        setattr(ns, self.dest, value)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) and ``--config FILE`` read before the flags."""

    def __init__(self, *a, flag_table: dict[str, Flag], **kw):
        super().__init__(*a, **kw)
        self.flag_table = flag_table

    def error(self, message: str):
        print(f"error: {message.removeprefix('argument ')}", file=sys.stderr)
        raise SystemExit(2)

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        for i, a in enumerate(args):
            if a == "--config" and i + 1 < len(args) or a.startswith("--config="):
                self.set_defaults(**self.read_config(args[i + 1] if a == "--config" else a.split("=", 1)[1]))
        return super().parse_known_args(args, namespace)

    def read_config(self, path: str) -> dict:
        import tomllib

        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            self.error(f"--config {path}: cannot read it as TOML ({getattr(e, 'strerror', None) or e})")
        by_dest = {f.dest: f for f in self.flag_table.values()}
        out = {}
        for key, value in data.items():
            flag = by_dest.get(key.replace("-", "_"))
            if flag is None:
                self.error(f"--config {path}: unknown key {key!r} (keys are flag names without the dashes, "
                           "e.g. max_repairs)")
            try:
                out[flag.dest] = _coerce(flag, value)
            except (argparse.ArgumentTypeError, TypeError) as e:
                self.error(f"--config {path}: {key}: {e}")
        return out


def _coerce(flag: Flag, value):
    if flag.kind is bool and type(value) is not bool:  # bool("no") is True: only true and false
        raise TypeError(f"expected bool (true or false), got {value!r}")
    if isinstance(value, str) and flag.kind is not str:
        return _parse(flag, value)
    if flag.repeat and isinstance(value, list):
        return flag.repeat.join(_coerce(flag, v) for v in value)
    if flag.kind is tuple and isinstance(value, list):
        return tuple(_coerce(dataclasses.replace(flag, kind=flag.elem), v) for v in value)
    if flag.kind is float and type(value) in (int, float):
        if not math.isfinite(value):  # TOML has inf and nan
            raise TypeError(f"expected a finite number, got {value!r}")
        return float(value)
    if type(value) is not flag.kind:
        raise TypeError(f"expected {flag.kind.__name__}, got {value!r}")
    return value


def add_flags(parser: argparse.ArgumentParser, table: dict[str, Flag], titles: dict[str, str]) -> None:
    groups: dict[str, argparse._ArgumentGroup] = {}
    for flag in table.values():
        section = flag.paths[0].rpartition(".")[0].removesuffix(".extra")
        g = groups.get(section) or groups.setdefault(section, parser.add_argument_group(titles.get(section, section)))
        if flag.kind is bool:
            g.add_argument(flag.name, dest=flag.dest, help=flag.help.replace("%", "%%"), action="store_true",
                           default=False if flag.negate else flag.default)  # dest: whether the switch is on
            continue
        kw = dict(dest=flag.dest, help=flag.help.replace("%", "%%"), default=flag.default, choices=flag.choices,
                  metavar=flag.metavar or ({float: "W,W,...", str: "NAME,..."}.get(flag.elem) if flag.kind is tuple else None),
                  type=lambda text, f=flag: _parse(f, text))
        if flag.kind is tuple or flag.repeat:
            kw.update(action=_Collect, const=flag.repeat)
        g.add_argument(flag.name, **kw)


def values(table: dict[str, Flag], ns: argparse.Namespace) -> dict[str, object]:
    """Field path -> value; an ``extra`` option is set only when given."""
    out = {}
    for flag in table.values():
        v = getattr(ns, flag.dest)
        for path in flag.paths:
            if ".extra." not in path:
                out[path] = (not v) if flag.negate else v
            elif v is not None and v is not False:
                head, _, key = path.rpartition(".")
                out.setdefault(head, {})[key] = v
    return out


def build(cls, vals: dict, prefix: str = ""):
    """``cls`` built from field paths (``vals``), sections first; a ConfigError names the full path."""
    kw = {}
    for f in dataclasses.fields(cls):
        path = f"{prefix}{f.name}"
        sub = f.default_factory if f.default_factory is not dataclasses.MISSING else None
        if dataclasses.is_dataclass(sub):
            kw[f.name] = build(sub, vals, path + ".")
        elif path in vals:
            kw[f.name] = vals[path]
    try:
        return cls(**kw)
    except ConfigError as err:
        raise err.within(prefix.rstrip(".")) if prefix else err


def flag_of(table: dict[str, Flag]):
    """``path -> flag`` for messages: the one mapping from field names to what the CLI calls them."""
    by_path = {p: f.name for f in table.values() for p in f.paths}
    return lambda path: by_path.get(path, path)
