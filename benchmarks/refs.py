"""What every old-vs-new benchmark shares: the old way is a git ref exported with ``git archive``
into a temporary folder, the new way is this working tree, and each runs as a child process
with its own tree first on ``PYTHONPATH`` (so the two never import each other's modules).

    from refs import ROOT, child_env, export_tree, trees
    with tempfile.TemporaryDirectory() as tmp:
        for name, tree in trees(args.ref, Path(tmp), new_only=args.new_only).items():
            subprocess.run([sys.executable, ...], env=child_env(tree), cwd=tree)

A benchmark runs as ``python benchmarks/bench_NAME.py`` (its folder is then on ``sys.path``, so
``import refs`` finds this file; ``benchmarks/gpu/`` scripts add the folder above themselves).
"""
from __future__ import annotations

import importlib.util
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def export_tree(ref: str, dest: Path, paths: tuple[str, ...] = ()) -> Path:
    """``git archive ref [paths]`` unpacked into ``dest/tree`` (the old code, importable from
    there); a ref git does not know exits with one line naming it."""
    proc = subprocess.run(["git", "-C", str(ROOT), "archive", ref, *paths], capture_output=True)
    if proc.returncode != 0:
        sys.exit(f"--ref: git archive {ref} failed: {proc.stderr.decode(errors='replace').strip()[:200]}")
    tree = Path(dest) / "tree"
    tree.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(tree)
    return tree


def trees(ref: str, tmp: Path, new_only: bool = False) -> dict[str, Path]:
    """``{"old": the exported ref, "new": this tree}`` in that order (``new_only``: the new one only)."""
    return ({} if new_only else {"old": export_tree(ref, Path(tmp) / "old_src")}) | {"new": ROOT}


def child_env(tree: Path, **extra: str) -> dict[str, str]:
    """The environment of a child that must import ``tree``'s packages, not this checkout's."""
    return {**os.environ, "PYTHONPATH": str(tree), **extra}


def import_old(ref: str, package: str, dest: Path, name: str):
    """``package`` of git commit ``ref``, imported in this process under ``name`` (e.g. the old
    sandbox as ``sandbox_old``, measured beside the new one)."""
    path = export_tree(ref, dest, (package,)) / package
    spec = importlib.util.spec_from_file_location(name, path / "__init__.py", submodule_search_locations=[str(path)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
