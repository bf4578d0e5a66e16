"""The one interface every model backend implements: a batch of requests in, completions out.

A request carries both the chat ``messages`` (what a language model reads) and the structured
``task`` (what the built-in synthesizer reads). The task never holds the hidden answer.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Iterator, Literal

Table = list[list[str]]
RequestKind = Literal["direct", "write", "fix"]


@dataclass(frozen=True)
class Task:
    """What a model is allowed to see of a case: the public example and the new input."""

    case_id: str
    input_table: Table
    output_table: Table
    test_table: Table


@dataclass(frozen=True)
class Feedback:
    """What the last program did on the public example, shown to the model in a repair prompt."""

    error: str  # a sandbox error category, "parse" (no code found), "wrong_output", or
    # "new_input_crash" (right on the example, crashed on the new input)
    message: str  # short, model-actionable text
    produced: Table | None = None  # the program's output on the public example, if any
    # the run on the new input (visible: it needs no answer) when it crashed; "" when it ran
    test_error: str = ""
    test_message: str = ""


@dataclass(frozen=True)
class GenerationRequest:
    kind: RequestKind
    messages: list[dict]  # [{"role": "system"|"user"|"assistant", "content": str}, ...]
    task: Task
    round: int = 0  # 0 for direct and WRITE, i >= 1 for the i-th repair
    previous_code: str | None = None
    feedback: Feedback | None = None
    sample: int = 0  # index of an independent sample of the same prompt


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    finish_reason: str = "stop"  # "stop", "length" (cut off at the token limit) or, synth only,
    # "exhausted" (fewer distinct example-consistent programs found than the sample index asks for)
    # and "budget" (the optional wall-clock cap stopped the search: the answer depends on load)
    cached: bool = False
    search_nodes: int = 0  # synth only: search nodes spent on this completion (model backends: 0)


@dataclass
class BackendConfig:
    """Everything a backend may need; each backend reads the fields it uses."""

    name: str = "synth"
    model: str | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int | None = None  # None: the model's generation config (no top-k when it sets none)
    seed: int = 0
    max_new_tokens: int = 1024
    batch_size: int = 8
    concurrency: int = 8
    enable_thinking: bool = False
    load_in_4bit: bool = False
    dtype: str = "auto"
    device: str = "auto"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    request_timeout_s: float = 120.0
    chat_template_kwargs: bool = True  # send enable_thinking to the template (off: servers that reject it)
    max_retries: int = 5
    replay_path: str | None = None
    cache_dir: str | None = None  # generation cache; None disables it
    # synth only: search budgets count nodes (deterministic); a wall-clock cap per search is off
    # (None) unless asked for, and a search it stops says so (finish_reason "budget")
    synth_write_nodes: int = 100
    synth_fix_nodes: int = 40_000  # see docs/synthesizer.md
    synth_time_budget_s: float | None = None
    # vllm parallelism, passed unchanged to vLLM's own engine arguments (no process farm here):
    # tensor and pipeline parallel split one engine over GPUs, data parallel runs replicas of it
    # (vLLM's AsyncLLM with its own DP coordinator); the executor is "mp" or "ray" (None: vLLM's choice)
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    distributed_executor_backend: str | None = None
    # engine options: vllm reads max_model_len, gpu_memory_utilization, enforce_eager,
    # language_model_only, load_format (and a legacy tensor_parallel_size); openai reads
    # retry_base_s, retry_max_s, fail_threshold, probe_after_s
    extra: dict = field(default_factory=dict)


class PartialGeneration(RuntimeError):
    """Some requests of a batch failed for good (e.g. HTTP 400): ``completions[i]`` is None for
    those and ``errors`` maps their index to a one-line reason. The generation cache stores the
    finished ones before passing the error on, so a rerun pays only for the failed requests."""

    def __init__(self, message: str, completions: list, errors: dict[int, str]):
        super().__init__(message)
        self.completions = completions
        self.errors = errors


class Backend(ABC):
    """A model backend. Subclasses implement ``generate``; ``close`` frees resources."""

    name: str = "base"

    def __init__(self, config: BackendConfig):
        self.config = config

    @property
    def model_name(self) -> str:
        return self.config.model or self.name

    # True when ``generate_iter`` hands out answers as they finish (the rollout then sends a whole
    # wave at once and checks answers while the rest are made)
    streams: bool = False

    @abstractmethod
    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        """Return one completion per request, in input order."""

    def generate_iter(self, requests: list[GenerationRequest]) -> Iterator[tuple[int, Completion]]:
        """(index, completion) for every request, in the order they finish; by default all of
        them, in input order, once ``generate`` returns."""
        yield from enumerate(self.generate(requests))

    def identity(self) -> dict:
        """What pins the model beyond its name (a config hash, a served model's id and root);
        part of the generation cache key so two different models under one name never share hits."""
        return {}

    def stats(self) -> dict:
        """Run statistics for the summary's ``timing`` section (e.g. per-endpoint throughput)."""
        return {}

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def in_order(answers: Iterator[tuple[int, Completion]], n: int) -> list[Completion]:
    """``generate`` of a streaming backend: its ``generate_iter`` answers put back in request order."""
    out: list = [None] * n
    for i, comp in answers:
        out[i] = comp
    return out
