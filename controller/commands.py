"""The subcommands ``live-tool-dagger compare`` and ``live-tool-dagger view`` (docs/compare.md).

``controller.cli.main`` hands the command line here when its first word is one of them; the
run's own flags are untouched. Each subcommand has its own parser, made the main command's way
(``controller.args``): its flags are the fields of a small dataclass (``CompareArgs``,
``ViewArgs``) with their help and defaults, its positionals are added beside them, and ``--help``
uses the main command's formatter (``controller.args.HelpFormatter``). Exit status: 0 done, 2 bad
input (one line on stderr names the flag, the file or what differs).

``view`` writes each found run's ``viewer/index.html`` from its ``viewer/data.json.gz`` and
today's assets before the index page (``controller.report.viewer.write_page``): committed studies
keep only the data.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from tracegen.errors import ConfigError

SUBCOMMANDS = ("compare", "view")


def _splits() -> tuple[str, ...]:
    from controller.report.compare import SPLITS

    return SPLITS


@dataclass
class CompareArgs:
    """The flags of ``compare`` (its two roots are positionals): each field a flag, as the run's are."""

    out: str | None = field(default=None, metadata={
        "help": "folder for the three files (default: ROOT_A/reports/compare_<name of ROOT_B>)", "metavar": "DIR"})
    split: str = field(default="test", metadata={"help": "which cases to compare", "choices": _splits})
    seed: int = field(default=0, metadata={"help": "seed of the family bootstrap and sign-flip test"})
    bootstrap_resamples: int = field(default=2000, metadata={"help": "family bootstrap resamples"})

    def __post_init__(self):
        if self.bootstrap_resamples < 1:
            raise ConfigError("`bootstrap_resamples` must be at least 1")


@dataclass
class ViewArgs:
    """The flags of ``view`` (its folder is a positional)."""

    out: str | None = field(default=None, metadata={
        "help": "the index page (default: DIR/runs.html)", "metavar": "FILE"})
    open: bool = field(default=False, metadata={"help": "open the index page in a web browser"})


def _parser(config_cls, positionals, **kw):
    """A parser of ``config_cls``'s flags (``controller.args``, as the run's) after ``positionals``
    (``(name, argparse keywords)``), with the main command's help formatter and one-line errors."""
    from controller.args import HelpFormatter, Parser, add_flags, flags

    table = flags(config_cls)
    p = Parser(formatter_class=HelpFormatter, flag_table=table, **kw)
    for name, spec in positionals:
        p.add_argument(name, **spec)
    add_flags(p, table, {"": None})
    return p, table


def _parse(config_cls, parser_fn, argv):
    """``(namespace, config)`` of a command line, or ``(None, 2)`` after one ``error:`` line naming the flag."""
    from controller.args import build, flag_of, values

    parser, table = parser_fn()
    ns = parser.parse_args(argv)
    try:
        return ns, build(config_cls, values(table, ns))
    except ConfigError as err:
        print(f"error: {err.render(flag_of(table))}", file=sys.stderr)
        return None, 2


def compare_parser():
    """The parser of ``compare`` and its flag table."""
    return _parser(
        CompareArgs,
        [("root_a", dict(metavar="ROOT_A", help="the first run (A)")),
         ("root_b", dict(metavar="ROOT_B", help="the second run (B); differences are B - A"))],
        prog="live-tool-dagger compare",
        description="Compare two runs on the same cases: accuracy and tool cost per policy in A and B,\n"
                    "B - A with a family-level interval, and the cases whose outcome differs.",
        epilog="ROOT is a run's --root (holding reports/final_summary.json) or a reports folder itself "
               "(e.g. results/foofah).\nRuns over different cases (other case ids in the split, or another "
               "case-set digest in run_config.json) are refused.\nWrites compare.json, compare.md and "
               "compare.html (links to each run's viewer). See docs/compare.md.")


def view_parser():
    """The parser of ``view`` and its flag table."""
    return _parser(
        ViewArgs,
        [("dir", dict(metavar="DIR", nargs="?", default=".", help="the folder to search (default: the current folder)"))],
        prog="live-tool-dagger view",
        description="List every run under a folder (any folder holding reports/final_summary.json, or a\n"
                    "reports folder holding final_summary.json; DIR itself included), write each run's\n"
                    "viewer page from its viewer/data.json.gz, and write an index page linking each run's viewer.",
        epilog="See docs/compare.md.")


def compare_main(argv: list[str]) -> int:
    from controller.report.compare import compare_markdown, compare_runs, default_out, write_compare
    from controller.report.runs import RunFilesError, load_run

    args, opts = _parse(CompareArgs, compare_parser, argv)
    if args is None:
        return opts
    try:
        a, b = load_run(args.root_a), load_run(args.root_b)
        res = compare_runs(a, b, split=opts.split, seed=opts.seed, n_resamples=opts.bootstrap_resamples)
    except RunFilesError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for side, run in (("a", a), ("b", b)):  # compare.html links each run's viewer page (a study keeps only its data)
        page, warning = _write_page(run)
        if warning:
            print(warning, file=sys.stderr)
        if page:
            res[side]["viewer"] = str(page)
    out = Path(opts.out) if opts.out else default_out(a, b)
    try:
        paths = write_compare(res, out)
    except OSError as err:
        print(f"error: {out}: cannot write ({err.strerror or err})", file=sys.stderr)
        return 2
    md = compare_markdown(res)
    print(md[:md.index("## Cases whose")].rstrip())
    n = sum(len(e["differing"]) for e in res["policies"].values())
    print(f"\n{n} (policy, case) outcomes differ; wrote {', '.join(p.name for p in paths)} to {out}")
    return 0


def view_main(argv: list[str]) -> int:
    from controller.report.outputs import atomic_write_text
    from controller.report.runs import RunFilesError, find_runs, runs_html, runs_text

    args, opts = _parse(ViewArgs, view_parser, argv)
    if args is None:
        return opts
    folder = Path(args.dir)
    try:
        runs, warnings = find_runs(folder)
    except RunFilesError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for w in warnings:
        print(w, file=sys.stderr)
    if not runs:
        print(f"error: {folder}: no run found (no reports/final_summary.json under it)", file=sys.stderr)
        return 2
    for run in runs:  # each run's page from its data and today's assets, so the index's links work
        _, warning = _write_page(run)
        if warning:
            print(warning, file=sys.stderr)
    out = Path(opts.out) if opts.out else folder / "runs.html"
    try:
        atomic_write_text(out, runs_html(runs, folder, out.parent))
    except OSError as err:
        print(f"error: {out}: cannot write ({err.strerror or err})", file=sys.stderr)
        return 2
    print(runs_text(runs, folder))
    print(f"\n{len(runs)} run{'s' * (len(runs) != 1)}; index: {out}")
    if opts.open:
        import webbrowser

        webbrowser.open(out.resolve().as_uri())
    return 0


def _write_page(run) -> tuple[Path | None, str | None]:
    """Write (or refresh) ``viewer/index.html`` of a run that holds ``viewer/data.json.gz`` (a
    committed study keeps only the data): ``(the page, None)``, ``(None, a warning line)`` when it
    cannot, ``(None, None)`` for a run without a data file (its page, if any, is linked as it is)."""
    from controller.report.viewer import DATA_FILE, ViewerInputError, write_page

    viewer = run.reports / "viewer"
    if not (viewer / DATA_FILE).is_file():
        return None, None
    try:
        return write_page(viewer)[0], None
    except ViewerInputError as err:
        return None, f"warning: {err} (its viewer page is not written)"
    except OSError as err:
        return None, f"warning: {viewer / 'index.html'}: cannot write ({err.strerror or err})"


def main(argv: list[str]) -> int:
    """``argv[0]`` names the subcommand."""
    return {"compare": compare_main, "view": view_main}[argv[0]](argv[1:])
