"""A sandbox stand-in that runs trusted test programs in this process, honouring each item's kind
and entry (the rollout's side of the sandbox contract, whichever sandbox build is installed)."""
from __future__ import annotations

import json

from sandbox.result import RunResult


class InProcessSandbox:
    """Runs the file's (trusted) programs in this process, honouring each item's kind and entry: the
    rollout's side of the sandbox contract, whichever sandbox build is installed."""

    def iter_many(self, items, timeout_s=1.5, memory_mb=256):
        for j, item in enumerate(items):
            code, x = item[0], item[1]
            entry = item[3] if len(item) > 3 else "transform"
            ns: dict = {}
            try:
                exec(code, ns)
                yield j, RunResult(True, json.loads(json.dumps(ns[entry](json.loads(json.dumps(x))))), None, "", 0.5)
            except Exception as e:  # noqa: BLE001 - the program's own error
                yield j, RunResult(False, None, "exception", f"{type(e).__name__}: {e}", 0.5)
