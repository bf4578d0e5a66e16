"""The subcommands ``live-tool-dagger compare`` and ``live-tool-dagger view`` (docs/compare.md).

``controller.cli.main`` hands the command line here when its first word is one of them; the
run's own flags are untouched. Each subcommand has its own parser (``--help`` shows the
defaults). Exit status: 0 done, 2 bad input (one line on stderr names the file or what differs).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

SUBCOMMANDS = ("compare", "view")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Each option's default after its help, unless the help says it or the option is a switch."""

    def _get_help_string(self, action):
        text = action.help or ""
        if ("default" in text or action.default is None or action.default is False
                or action.default == argparse.SUPPRESS or not action.option_strings):
            return text
        return f"{text} (default: {action.default})"


def compare_parser() -> argparse.ArgumentParser:
    from controller.report.compare import SPLITS

    p = argparse.ArgumentParser(
        prog="live-tool-dagger compare", formatter_class=_Formatter,
        description="Compare two runs on the same cases: accuracy and tool cost per policy in A and B,\n"
                    "B - A with a family-level interval, and the cases whose outcome differs.",
        epilog="ROOT is a run's --root (holding reports/final_summary.json) or a reports folder itself "
               "(e.g. results/foofah).\nRuns over different cases (other case ids in the split, or another "
               "case-set digest in run_config.json) are refused.\nWrites compare.json, compare.md and "
               "compare.html (links to each run's viewer). See docs/compare.md.")
    p.add_argument("root_a", metavar="ROOT_A", help="the first run (A)")
    p.add_argument("root_b", metavar="ROOT_B", help="the second run (B); differences are B - A")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="folder for the three files (default: ROOT_A/reports/compare_<name of ROOT_B>)")
    p.add_argument("--split", choices=SPLITS, default="test", help="which cases to compare")
    p.add_argument("--seed", type=int, default=0, help="seed of the family bootstrap and sign-flip test")
    p.add_argument("--bootstrap-resamples", type=int, default=2000, help="family bootstrap resamples")
    return p


def view_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="live-tool-dagger view", formatter_class=_Formatter,
        description="List every run under a folder (any folder holding reports/final_summary.json, or a\n"
                    "reports folder holding final_summary.json; DIR itself included) and write an index\n"
                    "page linking each run's viewer.", epilog="See docs/compare.md.")
    p.add_argument("dir", metavar="DIR", nargs="?", default=".", help="the folder to search (default: the current folder)")
    p.add_argument("--out", metavar="FILE", default=None, help="the index page (default: DIR/runs.html)")
    p.add_argument("--open", action="store_true", help="open the index page in a web browser")
    return p


def compare_main(argv: list[str]) -> int:
    from controller.report.compare import compare_markdown, compare_runs, default_out, write_compare
    from controller.report.runs import RunFilesError, load_run

    args = compare_parser().parse_args(argv)
    if args.bootstrap_resamples < 1:
        print("error: --bootstrap-resamples must be at least 1", file=sys.stderr)
        return 2
    try:
        a, b = load_run(args.root_a), load_run(args.root_b)
        res = compare_runs(a, b, split=args.split, seed=args.seed, n_resamples=args.bootstrap_resamples)
    except RunFilesError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else default_out(a, b)
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

    args = view_parser().parse_args(argv)
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
    out = Path(args.out) if args.out else folder / "runs.html"
    try:
        atomic_write_text(out, runs_html(runs, folder, out.parent))
    except OSError as err:
        print(f"error: {out}: cannot write ({err.strerror or err})", file=sys.stderr)
        return 2
    print(runs_text(runs, folder))
    print(f"\n{len(runs)} run{'s' * (len(runs) != 1)}; index: {out}")
    if args.open:
        import webbrowser

        webbrowser.open(out.resolve().as_uri())
    return 0


def main(argv: list[str]) -> int:
    """``argv[0]`` names the subcommand."""
    return {"compare": compare_main, "view": view_main}[argv[0]](argv[1:])
