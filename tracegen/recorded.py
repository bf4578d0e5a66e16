"""What the rollout keeps of an output made elsewhere (the ``imported`` backend, docs/import.md):
an answer or program recorded already parsed, an attempt that was never made, no timing, and where
the output came from. A live backend's completions pass through these unchanged."""
from __future__ import annotations

from .importfile import GIVEN
from .parsing import Parsed


def recorded_parse(comp) -> Parsed | None:
    """The parse of a completion its backend settled: nothing when no output was recorded
    (``Completion.absent``), the value as given (``Completion.given``); None: parse its text."""
    if getattr(comp, "absent", False):
        return Parsed(None, "failed", "no output recorded")
    given = getattr(comp, "given", None)
    if given is not None:
        return Parsed(given[0], GIVEN, "recorded as parsed")
    return None


def timed(comp) -> dict:
    """``gen_ms`` of a completion, absent when its backend recorded no time (imported outputs)."""
    return {} if comp.latency_ms is None else {"gen_ms": round(comp.latency_ms, 3)}


def provenance_into(part: dict, comp) -> None:
    """Where an output made elsewhere came from (``model``, ``prompt``), when its backend says so
    (``Completion.provenance`` not None: the imported backend). Such a repair was shown its
    recorded prompt, not the feedback this rollout would write: ``feedback`` is that prompt's text
    (a chat's last user message), or null when none was recorded."""
    prov = getattr(comp, "provenance", None)
    if prov is None:
        return
    part.update(prov)
    if part.get("kind") == "fix":
        part["feedback"] = _prompt_text(prov["prompt"]) if "prompt" in prov else None


def _prompt_text(prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    users = [m["content"] for m in prompt if m.get("role") == "user"]
    return users[-1] if users else prompt[-1]["content"]
