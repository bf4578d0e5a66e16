"""Generate tool-use traces, train controllers, and report accuracy and tool budget.

Subcommands, each with its own --help (docs/compare.md, docs/sft.md, docs/import.md):

    live-tool-dagger compare ROOT_A ROOT_B [--out DIR]   two runs on the same cases, B - A per policy
    live-tool-dagger view [DIR] [--open]                 list the runs under DIR, index page runs.html
    live-tool-dagger sft --data EXPORT [--out DIR]       train a coder on an SFT export (docs/sft.md)
    live-tool-dagger import FILE.jsonl --root ROOT       model outputs recorded elsewhere (docs/import.md)
    live-tool-dagger export --root ROOT FILE.jsonl       a run's traces in that format

Offline default (built-in synthesizer, tiny local LoRA base; no GPU, network or weights):

    live-tool-dagger --generate-traces --train-lora

Smoke run on a few cases:

    live-tool-dagger --generate-traces --limit-total 12 --max-repairs 1

Full study with a real model (weights already on disk or in the local HF cache):

    live-tool-dagger --root runs/qwen35_4b --generate-traces --train-lora \\
        --train-shuffled-lora --backend vllm --model Qwen/Qwen3.5-4B --max-repairs 2 \\
        --dagger-iters 3 --cv-folds 5 --resume

`python scripts/run_live_tool_dagger.py` is the same command from a checkout.
Outputs go to <root>/reports/ (final_summary.json, report.md, figures/, predictions/, viewer/index.html).
Exit status: 0 done, 2 bad input (one line names the file or flag), 130 interrupted.
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("live-tool-dagger")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


USAGE = "%(prog)s [FLAG ...]          a run: every flag is listed below with its default\n" \
        "       %(prog)s SUBCOMMAND ...    one of the subcommands listed below"
TITLES = {"": "run and splits", "backend": "backend (how the model attempts cases)",
          "rollout": "rollout and sandbox", "experiment": "controllers", "experiment.lora": "LoRA policy"}


def flag_table():
    from controller.args import flags
    from controller.config import RunConfig

    return flags(RunConfig)


def make_parser() -> argparse.ArgumentParser:
    """The flags of ``RunConfig`` and its sections (``controller.args``), plus ``--config`` and ``--version``."""
    from controller.args import HelpFormatter, Parser, add_flags
    from controller.config import RunConfig

    table = flag_table()
    doc = __doc__.split("\n\n")
    # the subcommands before the ~60 lines of flags: a short usage, then the title and the subcommands
    p = Parser(prog="live-tool-dagger", usage=USAGE, description="\n\n".join(doc[:3]), formatter_class=HelpFormatter,
               epilog="\n\n".join(doc[3:]), flag_table=table, config_cls=RunConfig)
    p.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    p.add_argument("--config", metavar="FILE", help="TOML file of settings, each by its field path ([rollout] "
                   "max_repairs = 1; a run's reports/config.toml holds them all) or, at the top level, by its flag "
                   "without the dashes (max_repairs = 1, base_url = [\"http://a/v1\", \"http://b/v1\"]); flags "
                   "given on the command line win (docs/api.md#config-files; default: none)")
    add_flags(p, table, TITLES)
    return p


def message(err) -> str:
    """A ``ConfigError`` as the command line says it: every field named by its flag."""
    from controller.args import flag_of

    return err.render(flag_of(flag_table()))


def build_config(args):
    """The ``RunConfig`` of parsed flags; a value no config takes raises ``UsageError`` naming its flag."""
    from controller.args import build, flag_of, values
    from controller.checks import UsageError
    from controller.config import RunConfig
    from tracegen.errors import ConfigError

    table = flag_table()
    try:
        return build(RunConfig, values(table, args))
    except ConfigError as err:
        raise UsageError(err.render(flag_of(table))) from None


def print_table(summary: dict) -> None:
    from controller.report.fmt import policy_table

    print("\n" + policy_table(summary))


def main(argv=None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if words and words[0] in ("compare", "view"):  # subcommands with their own parsers (controller/commands.py)
        from controller.commands import main as subcommand

        return subcommand(words)
    if words and words[0] in ("import", "export"):  # recorded outputs in and out (controller/importer.py)
        from controller.importer import main as transfer

        return transfer(words)
    if words and words[0] == "sft":  # train a coder on an SFT export (controller/sft_train.py)
        from controller.sft_train import main as sft_main

        return sft_main(words[1:])
    args = make_parser().parse_args(words)
    from tracegen.errors import ConfigError

    def _term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _term)
    from controller.console import quiet_libraries

    held_back = quiet_libraries()  # before transformers & co. are imported
    if hasattr(sys.stdout, "reconfigure"):  # a log file or pipe gets each line as it happens
        sys.stdout.reconfigure(line_buffering=True)
    from controller.pipeline import run

    try:
        summary = run(build_config(args))
    except ConfigError as err:  # names fields: shown as their flags
        print(f"error: {message(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished records are kept; rerun with --resume to continue", file=sys.stderr)
        return 130
    print_table(summary)
    if summary.get("logprobs_unavailable"):
        from controller.report.markdown import logprobs_line

        print(f"\nwarning: {logprobs_line(summary['logprobs_unavailable'])}", file=sys.stderr)
    if held_back is not None and held_back.line():
        print(held_back.line(), file=sys.stderr)
    print(f"\ntotal {summary['timing']['total_s']:.1f}s; report: {Path(args.root) / 'reports' / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
