"""The house's import rule (docs/development.md#the-map-of-the-house), checked on the source.

Rooms follow the data flow: ``controller.report -> controller.study -> controller.learn ->
controller.env -> tracegen -> {sandbox, cases}``. A module imports only from its own room or a
room below it, at module level or inside a function alike (a lazy import is for heavy libraries,
never a way round this rule), and no set of modules imports each other in a circle."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("cases", "sandbox", "tracegen", "controller")
# rank of each room: a module may import a module of equal or lower rank only
RANKS = {"cases": 0, "sandbox": 0, "tracegen": 1, "controller.env": 2, "controller.learn": 3,
         "controller.study": 4, "controller.report": 5, "controller": 6}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def room(mod: str) -> str:
    for r in sorted(RANKS, key=len, reverse=True):
        if mod == r or mod.startswith(r + "."):
            return r
    raise AssertionError(f"{mod} is in no room")


def imports(mod: str, path: Path, known: set[str]) -> set[str]:
    """Every project module ``mod`` imports, anywhere in the file."""
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for n in names:
            while n and n not in known:
                n = n.rpartition(".")[0]
            if n and n != mod:
                out.add(n)
    return out


def graph() -> dict[str, set[str]]:
    mods = project_modules()
    return {m: imports(m, p, set(mods)) for m, p in mods.items()}


def test_imports_point_down_the_data_flow():
    bad = [f"{m} -> {t}" for m, targets in graph().items() for t in sorted(targets)
           if RANKS[room(t)] > RANKS[room(m)] or (RANKS[room(t)] == RANKS[room(m)] and room(t) != room(m))]
    assert not bad, "imports against the data flow:\n" + "\n".join(bad)


def _package_edges(g):
    """A package's ``__init__`` re-exports its modules: that is not a circle through them."""
    return {m: {t for t in ts if not (m.startswith(t + ".") and t in g)} for m, ts in g.items()}


def test_no_import_circle():
    g = _package_edges(graph())
    state: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(g.get(m, ())):
            if state.get(t) == 1:
                circles.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m)
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_the_rule_catches_an_upward_import(tmp_path):
    """The checker itself: an env module that imports the study is reported."""
    known = {"controller.env.state", "controller.study.stats"}
    p = tmp_path / "state.py"
    p.write_text("def f():\n    from controller.study.stats import wilson_ci\n")
    assert imports("controller.env.state", p, known) == {"controller.study.stats"}
    assert RANKS[room("controller.study.stats")] > RANKS[room("controller.env.state")]
