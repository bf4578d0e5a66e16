"""Fixtures shared by every test folder (tests/<package>/ mirrors the packages; docs/development.md).

* ``scripted``: the scripted backend class (``tests/scripted.py``), ``scripted(answers)``;
* ``sb``: one ``Sandbox(workers=2)`` per module (the pre-check on), ``sb_unchecked`` the same
  without it (hostile programs must reach the process limits); the sandbox tests still define
  their own copies (tests/sandbox/ is being edited elsewhere), which shadow these until dropped;
* ``tiny_model``: the tiny Qwen3.5-architecture model, built once per session;
* ``run_cli``: the command as a user runs it, ``python scripts/run_live_tool_dagger.py ...``, in a
  child process (so no test imports a script);
* ``browser``: one headless system Chromium per module through playwright (``browsers.find_browser``),
  skipped with a warning when none is found.

This folder is on ``sys.path`` (pytest puts a rootdir conftest's folder there), so the helper
modules beside this file (``e2e_helpers``, ``tracefactory``, ``scripted``, ``local_http``,
``openai_stub``, ``browsers``, ``inprocess``) import by name from every folder below it.
"""
from __future__ import annotations

import subprocess
import sys
import pytest

from e2e_helpers import CLI


@pytest.fixture
def scripted():
    from scripted import ScriptedBackend

    return ScriptedBackend


@pytest.fixture(scope="module")
def sb():
    from sandbox import Sandbox

    with Sandbox(workers=2) as box:
        yield box


@pytest.fixture(scope="module")
def sb_unchecked():
    from sandbox import Sandbox

    with Sandbox(workers=2, ast_check=False) as box:
        yield box


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    from tracegen.tiny_model import build_tiny_model

    return build_tiny_model(str(tmp_path_factory.mktemp("tiny") / "base"))


@pytest.fixture
def run_cli():
    def run(*args, cwd=None, env=None, timeout=900) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(CLI), *map(str, args)], capture_output=True, text=True,
                              cwd=cwd, env=env, timeout=timeout)

    return run


@pytest.fixture(scope="module")
def browser():
    import warnings

    from browsers import find_browser

    exe = find_browser()
    if exe is None:
        reason = ("no system Chromium found (install Debian's chromium-headless-shell or set VIEWER_BROWSER): "
                  "the pages were NOT tested in a browser")
        warnings.warn(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe)
        yield b
        b.close()
