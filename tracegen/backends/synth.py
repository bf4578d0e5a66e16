"""The ``synth`` backend: the offline default "model", a programming-by-example synthesizer.

It reads the structured task of each request (the public example and the new input), never the
hidden answer, and ignores the chat text except to count its tokens:
- ``direct``: the cell-copying guesser's table for the new input, as JSON;
- ``write`` (round 0): a search with ``config.synth_write_nodes`` nodes;
- ``fix`` (repair rounds): a search with ``config.synth_fix_nodes`` nodes that never returns a
  program it already tried (their keys ride along in the emitted code's ``# program:`` and
  ``# tried:`` lines) and that starts from the failed attempt's steps when the feedback says the
  program ran but produced the wrong table (after a crash it starts over from the empty program).
The text reads like a model's answer: one sentence, then the code in a fenced python block.
Output is deterministic: for sample 0 the search order is fixed; other samples shuffle it with a
seed drawn from ``config.seed`` and the sample index. Token counts are counts of the regex
``\\w+|[^\\w\\s]`` over the prompt messages and over the text.
"""
from __future__ import annotations

import json
import re
import time

from tracegen.synth import describe_step, emit_code, guess_direct, read_history, synthesize

from .base import Backend, Completion, GenerationRequest

_TOKEN = re.compile(r"\w+|[^\w\s]")
# feedback errors meaning the program ran and returned a table: repair from its steps
_RAN = {"wrong_output", "bad_output"}


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text or ""))


def _prompt_tokens(messages: list[dict]) -> int:
    return sum(count_tokens(str(m.get("content", ""))) for m in messages)


def _steps_text(program) -> str:
    steps = [describe_step(name, params) for name, params in program]
    if not steps:
        return "return the table unchanged"
    return "; ".join(steps)


def _program_text(kind: str, result, tried_before: bool) -> str:
    n = len(result.program)
    count = "one step" if n == 1 else f"{n} steps"
    if result.found:
        lead = "The previous program was wrong. " if kind == "fix" else ""
        sentence = f"{lead}This program reproduces the example in {count}: {_steps_text(result.program)}."
    else:
        lead = "I could not repair the program" if kind == "fix" and tried_before else \
            "I could not find a program that reproduces the example"
        sentence = f"{lead}; this is the closest I found ({count}): {_steps_text(result.program)}."
    return f"{sentence}\n\n```python\n{result.code}```\n"


class SynthBackend(Backend):
    """Built-in synthesizer; see the module docstring for what each request kind does."""

    name = "synth"

    @property
    def model_name(self) -> str:
        return self.config.model or "synth-pbe"

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        return [self._one(r) for r in requests]

    def _one(self, req: GenerationRequest) -> Completion:
        t0 = time.perf_counter()
        task = req.task
        if req.kind == "direct":
            guess = guess_direct(task.input_table, task.output_table, task.test_table)
            text = json.dumps(guess, ensure_ascii=False)
        elif req.kind in ("write", "fix"):
            text = self._program(req)
        else:
            raise ValueError(f"synth backend: unknown request kind {req.kind!r}")
        return Completion(
            text=text,
            prompt_tokens=_prompt_tokens(req.messages),
            completion_tokens=count_tokens(text),
            latency_ms=(time.perf_counter() - t0) * 1000.0,
        )

    def _program(self, req: GenerationRequest) -> str:
        cfg = self.config
        previous, tried = (None, [])
        if req.kind == "fix":
            previous, tried = read_history(req.previous_code)
        error = req.feedback.error if req.feedback is not None else None
        seeds = [previous] if previous and error in _RAN else []
        shuffle = None if req.sample == 0 else cfg.seed * 1_000_003 + req.sample
        result = synthesize(
            [(req.task.input_table, req.task.output_table)],
            max_nodes=cfg.synth_write_nodes if req.kind == "write" else cfg.synth_fix_nodes,
            time_budget_s=cfg.synth_time_budget_s,
            exclude=tried, seeds=seeds, shuffle_seed=shuffle,
        )
        code = emit_code(result.program, tried=tried)
        result.code = code
        return _program_text(req.kind, result, bool(tried))
