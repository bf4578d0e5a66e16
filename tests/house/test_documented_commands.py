"""Every command the README and docs/*.md show in a fenced code block runs as written.

A command is a line (continuation lines joined) of a fenced block that calls ``live-tool-dagger``,
``python scripts/run_live_tool_dagger.py``, ``python -m controller...`` or ``python -m cases.generate``,
after an environment prefix (``OMP_NUM_THREADS=1``) or a ``pip install ... &&`` (installing is not
run). Each is:

* skipped, with its reason, when it needs a model, a network or a GPU (``--backend hf|vllm|openai``,
  a ``--model``, ``--base-url``) or is a synopsis with placeholders (``compare ROOT_A ROOT_B [...]``);
* slow when it traces the whole case set (no ``--limit-total`` / ``--cases-per-family``), replays
  such a run, or refits the learners at several split seeds (``--split-seeds`` over 1):
  ``test_documented_block_in_order`` (``-m slow``) runs its whole code block in order
  in one working folder, so a re-analysis finds the traces the commands before it made;
* run by default otherwise, each in a fresh working folder: a command that re-analyses traces
  (no ``--generate-traces``) gets the state it documents needing, the traces of the documented
  smoke run (``--generate-traces --limit-total 12 --max-repairs 1``) in its root's reports/.

Each runs as a child in a fresh temporary working directory (a command without ``--root`` writes
there); ``live-tool-dagger`` is this checkout's ``scripts/run_live_tool_dagger.py`` (the same
CLI; ``.ci/run`` checks the installed command), a path under ``/tmp/`` is moved under the working
directory, and the checkout's ``results/`` and ``studies/`` (which the docs name relative to it)
are linked there. A failing command fails with its stderr.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "scripts" / "run_live_tool_dagger.py"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PROGRAMS = ("live-tool-dagger", "python scripts/run_live_tool_dagger.py", "python -m controller",
            "python -m cases.generate")  # the case generator: a documented block makes its cases first
MODEL_BACKENDS = ("hf", "vllm", "openai")
SMOKE = ["--generate-traces", "--limit-total", "12", "--max-repairs", "1"]  # README's smoke run
LINKED = ("results", "studies")  # what the docs name relative to the checkout


@dataclass
class Command:
    source: str  # file:line
    block: str  # file:line of the fence
    text: str  # as written (continuations joined)
    env: dict
    words: list  # the command's words after the program
    program: str

    @property
    def id(self) -> str:
        return self.source

    def flag(self, name: str):
        """The value of ``name`` (None: not given; True: a switch)."""
        for i, w in enumerate(self.words):
            if w == name:
                nxt = self.words[i + 1] if i + 1 < len(self.words) else None
                return nxt if nxt is not None and not nxt.startswith("--") else True
            if w.startswith(name + "="):
                return w.split("=", 1)[1]
        return None


# ---- finding them ---------------------------------------------------------------------------------

def fenced_blocks(text: str):
    """(line number of the fence, [(line number, line), ...]) of every fenced block."""
    block, fence, start = None, None, 0
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"\s*(`{3,}|~{3,})", line)
        if m and block is None:
            block, fence, start = [], m.group(1), n
        elif m and line.strip().startswith(fence):
            yield start, block
            block = None
        elif block is not None:
            block.append((n, line))


def joined_lines(lines):
    """(first line number, text) with ``\\``-continued lines joined."""
    buf, first = "", None
    for n, line in lines:
        first = n if not buf else first
        buf = f"{buf} {line.strip()}" if buf else line.strip()
        if buf.endswith("\\"):
            buf = buf[:-1].rstrip()
            continue
        yield first, buf
        buf = ""
    if buf:
        yield first, buf


def parse(text: str):
    """(env, program, words) of a documented line, or None when it runs none of PROGRAMS."""
    for part in re.split(r"\s*(?:&&|;)\s*", text):
        part = re.sub(r"^\$\s+", "", part)
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            continue
        env = {}
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
            k, v = words.pop(0).split("=", 1)
            env[k] = v
        line = " ".join(words)
        for prog in PROGRAMS:
            if line == prog or line.startswith(prog + " ") or (prog.endswith("controller") and line.startswith(prog + ".")):
                n = len(prog.split())
                if prog.startswith("python -m "):
                    n = 3  # python -m MODULE (for controller: its submodule)
                return env, " ".join(words[:n]), words[n:]
    return None


def documented_commands() -> list[Command]:
    out = []
    for path in DOCS:
        rel = path.relative_to(REPO).as_posix()
        for start, lines in fenced_blocks(path.read_text(encoding="utf-8")):
            for n, text in joined_lines(lines):
                found = parse(text)
                if found:
                    env, program, words = found
                    out.append(Command(f"{rel}:{n}", f"{rel}:{start}", text, env, words, program))
    return out


# ---- what each needs ----------------------------------------------------------------------------

def skip_reason(c: Command) -> str | None:
    """Why ``c`` cannot run here (a model, a network, a GPU, placeholders), or None."""
    backend = c.flag("--backend")
    if backend in MODEL_BACKENDS:
        return f"needs a model: --backend {backend}" + (f" --model {c.flag('--model')}" if c.flag("--model") else "")
    if c.flag("--model") not in (None,):
        return f"needs a model: --model {c.flag('--model')}"
    if c.flag("--base-url") is not None:
        return "needs a server: --base-url"
    if any(re.search(r"\[.*\]|\b[A-Z]+_[A-Z]\b|^[A-Z]{3,}$", w) for w in c.words):
        return "a synopsis with placeholders, not a command"
    return None


def subcommand(c: Command) -> bool:
    return bool(c.words) and not c.words[0].startswith("-")


def traces(c: Command) -> bool:
    return c.flag("--generate-traces") is True


def reanalysis(c: Command) -> bool:
    """Reads the traces under its root (no tracing, no subcommand, not --version / --help)."""
    return (not c.program.startswith("python -m ") and not subcommand(c) and not traces(c)
            and not {"--version", "--help", "-h"} & set(c.words))


def slow(c: Command) -> bool:
    """Traces (or replays) the whole case set, or refits every learner in every fold at several split
    seeds: a minute or more on two cores."""
    whole = traces(c) and c.flag("--limit-total") is None and c.flag("--cases-per-family") is None
    seeds = c.flag("--split-seeds")
    return whole or c.flag("--replay") is not None or (isinstance(seeds, str) and seeds.isdigit() and int(seeds) > 1)


COMMANDS = documented_commands()
RUNNABLE = [c for c in COMMANDS if skip_reason(c) is None]


def unique(cmds):
    seen, out = set(), []
    for c in cmds:
        key = (c.program, tuple(c.words), tuple(sorted(c.env.items())))
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


# ---- running one --------------------------------------------------------------------------------

def argv(c: Command, cwd: Path) -> list[str]:
    words = [str(cwd / w.lstrip("/")) if w.startswith("/tmp/") else w for w in c.words]
    if c.program.startswith("python -m "):
        return [sys.executable, "-m", *c.program.split()[2:], *words]
    return [sys.executable, str(CLI), *words]


def root_of(c: Command, cwd: Path) -> Path:
    root = c.flag("--root")
    return cwd if root in (None, True) else (cwd / root.lstrip("/") if root.startswith("/tmp/") else cwd / root)


def workdir(tmp: Path) -> Path:
    cwd = tmp / "cwd"
    cwd.mkdir()
    for name in LINKED:
        (cwd / name).symlink_to(REPO / name, target_is_directory=True)
    return cwd


def run(c: Command, cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    env = {**os.environ, **c.env, "PYTHONPATH": str(REPO)}
    r = subprocess.run(argv(c, cwd), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{c.source}: {c.text}\nexit {r.returncode}\n{r.stderr[-4000:]}"
    if traces(c) or reanalysis(c):
        assert (root_of(c, cwd) / "reports" / "final_summary.json").is_file(), f"{c.source}: no summary written"
    return r


@pytest.fixture(scope="module")
def smoke_traces(tmp_path_factory):
    """The reports/ of the documented smoke run: what a re-analysis command needs to find."""
    root = tmp_path_factory.mktemp("smoke")
    r = subprocess.run([sys.executable, str(CLI), "--root", str(root), *SMOKE], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return root / "reports"


def give_traces(reports: Path, root: Path) -> None:
    """Put the smoke run's inputs (traces, run config, split) under ``root/reports``."""
    (root / "reports").mkdir(parents=True, exist_ok=True)
    for name in ("fresh_traces.jsonl", "run_config.json", "split_manifest.json"):
        shutil.copy(reports / name, root / "reports" / name)


# ---- the tests ----------------------------------------------------------------------------------

def test_the_docs_show_enough_commands_to_check():
    assert len(COMMANDS) >= 25, [c.text for c in COMMANDS]
    fast = [c for c in unique(RUNNABLE) if not slow(c)]
    assert len(fast) >= 6 and len([c for c in RUNNABLE if slow(c)]) >= 4
    assert len(COMMANDS) - len(RUNNABLE) >= 8  # the model-backend examples
    assert any(c.text.startswith("pip install -e . && live-tool-dagger") for c in COMMANDS)  # the quickstart


@pytest.mark.parametrize("c", [pytest.param(c, id=c.id, marks=pytest.mark.skip(reason=skip_reason(c)))
                               for c in COMMANDS if skip_reason(c)])
def test_commands_that_need_a_model(c):  # pragma: no cover (skipped: listed with their reasons)
    pass


@pytest.mark.parametrize("c", [c for c in unique(RUNNABLE) if not slow(c)], ids=lambda c: c.id)
def test_documented_command(c, tmp_path, smoke_traces):
    cwd = workdir(tmp_path)
    if reanalysis(c):
        give_traces(smoke_traces, root_of(c, cwd))
    run(c, cwd, timeout=300)


def slow_blocks() -> dict[str, list[Command]]:
    blocks: dict[str, list[Command]] = {}
    for c in RUNNABLE:
        blocks.setdefault(c.block, []).append(c)
    return {b: cs for b, cs in blocks.items() if any(slow(c) for c in cs)}


@pytest.mark.slow
@pytest.mark.timeout(7200)
@pytest.mark.parametrize("block", sorted(slow_blocks()))
def test_documented_block_in_order(block, tmp_path, smoke_traces):
    """A block with a whole-set run, in order in one folder: re-analyses read the traces before them."""
    cwd = workdir(tmp_path)
    for c in slow_blocks()[block]:
        replay = c.flag("--replay")
        if isinstance(replay, str) and not (cwd / replay).exists():
            # the run it re-grades (a model run in the docs): the synthesizer's traces of the whole set,
            # made with the chain settings the replay gives (a replay asks for what its run made)
            made = Path(replay).parent.parent
            settings = [w for f in ("--max-repairs", "--program-samples") if isinstance(c.flag(f), str)
                        for w in (f, c.flag(f))]
            r = subprocess.run([sys.executable, str(CLI), "--root", str(cwd / made), "--generate-traces",
                                "--no-progress", *settings], cwd=cwd, capture_output=True, text=True,
                               timeout=3600)
            assert r.returncode == 0, r.stderr[-3000:]
        if reanalysis(c) and not (root_of(c, cwd) / "reports" / "fresh_traces.jsonl").exists():
            give_traces(smoke_traces, root_of(c, cwd))
        run(c, cwd, timeout=7200)
