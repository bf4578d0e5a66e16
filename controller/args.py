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
``metadata["options"]``. ``--config FILE`` (TOML) sets any field by its path (``[rollout]
max_repairs = 1``, a section a table), and any flag by its name without the dashes at the top level
(``max_repairs = 1``, as config files did before); a flag on the command line wins. ``config_text``
writes a config as such a file, every field by its path. ``flag_of`` maps a field path to its flag:
error messages name fields and the command line shows them as flags.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
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


def _leaves(root_cls) -> dict[str, Flag]:
    """Every leaf field, flag or not, as a ``Flag`` of its kind named by its path: how a config
    file's value is read for a field no flag sets."""
    out = {}
    for path, f, hint in _walk(root_cls):
        kind, elem = _kind(hint)
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        out[path] = Flag(path, [path], kind, elem, default)
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


class PerPath(dict):
    """A flag's value from a config file that set the fields of one shared flag apart (``[backend]
    seed = 1``, ``[experiment] seed = 2``): field path -> value; a use of the flag replaces it."""

    def __str__(self) -> str:
        return ", ".join(f"{p} {v}" for p, v in self.items())


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keep the epilog's layout; show each flag's default unless its help already says it: a switch
    is off by default, a None default's help says what happens unset (tests/controller/run/test_cli_config.py
    checks that every flag's entry names its default). The one formatter of the main command and
    its subcommands (``compare``, ``view``, ``sft``)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default is argparse.SUPPRESS or not action.option_strings:
            return text
        if action.nargs == 0:  # a switch: --x turns it on, --no-x turns its feature off
            return f"{text} (default: off)"
        if action.default is None:
            return text
        shown = ",".join(map(str, action.default)) if isinstance(action.default, tuple) else action.default
        return f"{text} (default: {shown})"


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) and ``--config FILE`` read before the flags.
    ``config_cls``: the config the flags fill in; its field paths are then config-file keys too."""

    def __init__(self, *a, flag_table: dict[str, Flag], config_cls=None, **kw):
        # no prefix matching: `--max-repair 0` must not quietly mean `--max-repairs 0`
        super().__init__(*a, allow_abbrev=False, **kw)
        self.flag_table = flag_table
        self.config_cls = config_cls

    def error(self, message: str):
        print(f"error: {message.removeprefix('argument ')}", file=sys.stderr)
        raise SystemExit(2)

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        for i, a in enumerate(args if "--config" in self._option_string_actions else ()):
            if a == "--config" and i + 1 < len(args) or a.startswith("--config="):
                self.set_defaults(**self.read_config(args[i + 1] if a == "--config" else a.split("=", 1)[1]))
        return super().parse_known_args(args, namespace)

    def read_config(self, path: str) -> dict:
        """The defaults a config file sets: flag dest -> value, and ``_config_fields`` (field path ->
        value) for the fields no flag sets (``values`` adds them)."""
        import tomllib

        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            self.error(f"--config {path}: cannot read it as TOML ({getattr(e, 'strerror', None) or e})")
        by_dest = {f.dest: f for f in self.flag_table.values()}
        by_path = {p: f for f in self.flag_table.values() for p in f.paths}
        leaves = _leaves(self.config_cls) if self.config_cls else {}
        sections = {p.rpartition(".")[0] for p in leaves} | {p for p, f in leaves.items() if f.kind is dict}
        out, per_path, fields = {}, {}, {}

        def read(flag: Flag, key: str, value):
            try:
                return _coerce(flag, value)
            except (argparse.ArgumentTypeError, TypeError) as e:
                self.error(f"--config {path}: {key}: {e}")

        def visit(table: dict, prefix: str) -> None:
            for key, value in table.items():
                dotted = prefix + key.replace("-", "_")
                if isinstance(value, dict) and dotted in sections:
                    visit(value, dotted + ".")
                elif not prefix and key.replace("-", "_") in by_dest:  # a flag by its name
                    flag = by_dest[key.replace("-", "_")]
                    out[flag.dest] = read(flag, key, value)
                elif dotted in by_path:  # a field a flag sets
                    flag = by_path[dotted]
                    v = read(flag, dotted, value)
                    per_path.setdefault(flag.dest, PerPath())[dotted] = v
                elif dotted in leaves and leaves[dotted].kind is not dict:  # a field no flag sets
                    fields[dotted] = read(leaves[dotted], dotted, value)
                elif prefix[:-1] in leaves and leaves[prefix[:-1]].kind is dict:  # a key of a dict field
                    fields.setdefault(prefix[:-1], {})[key] = value
                else:
                    known = ("keys are field paths, e.g. max_repairs under [rollout], or flag names without the "
                             "dashes" if self.config_cls else "keys are flag names without the dashes, e.g. max_repairs")
                    self.error(f"--config {path}: unknown key {dotted!r} ({known})")

        visit(data, "")
        for dest, got in per_path.items():
            flag = by_dest[dest]
            same = set(got) == set(flag.paths) and len({json.dumps(v, default=str) for v in got.values()}) == 1
            if len(flag.paths) == 1 or same:  # one value for the flag: as if it were given by its name
                v = next(iter(got.values()))
                out[dest] = (not v) if flag.negate else v
            else:
                out[dest] = got
        return {**out, "_config_fields": fields} if fields else out


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


def add_flags(parser: argparse.ArgumentParser, table: dict[str, Flag], titles: dict[str, str | None]) -> None:
    """Each flag in a group per section, titled by ``titles`` (a section's path by default; a title
    of None: the parser's own options, beside ``--help``)."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for flag in table.values():
        section = flag.paths[0].rpartition(".")[0].removesuffix(".extra")
        title = titles.get(section, section)
        g = groups.get(section) or groups.setdefault(
            section, parser if title is None else parser.add_argument_group(title))
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
    """Field path -> value; an ``extra`` option is set only when given; the fields a config file
    set that no flag sets (``_config_fields``) are added, a dict's keys under its flags'."""
    out = {}
    for flag in table.values():
        v = getattr(ns, flag.dest)
        for path in flag.paths:
            pv = v.get(path, flag.default) if isinstance(v, PerPath) else (not v) if flag.negate else v
            if ".extra." not in path:
                out[path] = pv
            elif pv is not None and pv is not False:
                head, _, key = path.rpartition(".")
                out.setdefault(head, {})[key] = pv
    for path, v in getattr(ns, "_config_fields", {}).items():
        out[path] = {**v, **out.get(path, {})} if isinstance(v, dict) else v
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


# ---- a config as a config file ----------------------------------------------------------------

def config_text(cfg, title: str = "") -> str:
    """``cfg`` as a ``--config`` file: every field by its path (the top-level fields, then a table
    per section, ``[backend]`` ... ``[experiment.lora]``), so reading it back builds the same
    config. TOML has no null: a field that is None (each such field defaults to None) is a comment."""
    lines = [f"# {title}" if title else f"# {type(cfg).__name__}: every field, by its path"]

    def section(obj, prefix: str) -> None:
        subs = []
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if dataclasses.is_dataclass(v):
                subs.append((f.name, v))
            elif v is None:
                default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
                if default is not None:
                    raise TypeError(f"{prefix}{f.name}: None, which a config file cannot say (it defaults to {default!r})")
                lines.append(f"# {f.name}: not set")
            else:
                lines.append(f"{f.name} = {_toml(v)}")
        for name, sub in subs:
            lines.extend(["", f"[{prefix}{name}]"])
            section(sub, f"{prefix}{name}.")

    section(cfg, "")
    return "\n".join(lines) + "\n"


def config_dict(cfg) -> dict:
    """``cfg`` as ``reports/config.toml`` holds it, read back: every field by its path, a table per
    section, a None field absent. ``run_config.json`` and the summary's ``config`` are this, so the
    three never disagree on a setting or its spelling."""
    import tomllib

    return tomllib.loads(config_text(cfg))


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _toml(v) -> str:
    """A TOML value: a bool, number, string, array or inline table (its keys sorted: a dict read
    back from flags and from the file alike has another order)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("nan" if v != v else "inf" if v > 0 else "-inf")
    if isinstance(v, str):  # JSON's escapes are TOML's; DEL must be escaped too
        return json.dumps(v).replace("\x7f", "\\u007f")
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k if _BARE.fullmatch(k) else json.dumps(k)} = {_toml(x)}" for k, x in sorted(v.items())) + "}"
    raise TypeError(f"no TOML for {v!r}")
