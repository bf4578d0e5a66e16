"""The one interface every model backend implements: a batch of requests in, completions out.

A request carries both the chat ``messages`` (what a language model reads) and the structured
``task`` (what the built-in synthesizer reads). The task never holds the hidden answer.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterator, Literal

from cases import Example
from cases.case import OneExampleViews
from tracegen.errors import ConfigError, check

Table = list[list[str]]
RequestKind = Literal["direct", "write", "fix"]


@dataclass(frozen=True)
class Task(OneExampleViews):
    """What a model is allowed to see of a case: the public examples and the new input, the type of
    the outputs (``cases.VALUE_TYPES``) and the function a program defines."""

    case_id: str
    examples: tuple[Example, ...]
    test_input: Any
    value_type: str = "table"
    entry: str = "transform"

    @classmethod
    def from_tables(cls, case_id: str, input_table: Table, output_table: Table, test_table: Table) -> Task:
        """A one-example table task (the Foofah shape)."""
        return cls(case_id, (Example(input_table, output_table),), test_table)

    @classmethod
    def of_case(cls, case) -> Task:
        return cls(case.case_id, tuple(case.examples), case.test_input, case.value_type, case.entry)

    @property
    def one_table_example(self) -> bool:
        """One example of string tables, programs defining ``transform``: the prompts and feedback of
        the Foofah shape, unchanged."""
        return len(self.examples) == 1 and self.value_type == "table" and self.entry == "transform"



@dataclass(frozen=True)
class Feedback:
    """What the last program did on the public example, shown to the model in a repair prompt."""

    error: str  # a sandbox error category, "parse" (no code found), "wrong_output", or
    # "new_input_crash" (right on the example, crashed on the new input)
    message: str  # short, model-actionable text
    # the program's output on the public example, if any (the rollout's requests leave it None: the
    # message holds its row diff, and a wave's requests would otherwise hold its outputs decoded)
    produced: Table | None = None
    # the run on the new input (visible: it needs no answer) when it crashed; "" when it ran
    test_error: str = ""
    test_message: str = ""
    signature: str = "def transform(table):"  # the function the program must define, as the prompt names it
    example: int = 0  # with several examples: which one (1-based) the feedback is about; 0: the only one


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
    # token log-probability statistics of the answer (``backends/logprobs.py``); None: not recorded
    logprobs: dict | None = None
    # recorded outputs (the imported backend): ``given`` = (value,) is an answer or program taken as
    # already parsed (``text`` is then ""); ``absent``: no output was recorded for this request (a
    # chain the source ended, a sample it never drew): the rollout ends that chain without a round;
    # ``provenance``: what the record keeps of where the output came from (``model``, ``prompt``)
    given: tuple | None = None
    absent: bool = False
    provenance: dict | None = None


def _backend_names() -> list[str]:
    """The registered backends (``--backend`` choices), read when the flags are built."""
    from tracegen.backends import available_backends

    return available_backends()


def _f(default, help: str, **meta):
    """A config field with its help text (and, for the CLI, an optional ``flag`` alias). ``readers``:
    the only backends that read it, so another backend refuses it set (``refused_hint`` says what
    works instead) rather than silently ignoring it."""
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help, **meta})
    return field(default=default, metadata={"help": help, **meta})


# engine options kept in ``BackendConfig.extra`` (set only when given): key -> (type, flag, help)
EXTRA_OPTIONS = {
    "max_model_len": (int, "--max-model-len", "vllm: context length to reserve (default: the model's, 262144 "
                      "for Qwen3.5; e.g. 8192 saves most KV-cache memory)"),
    "gpu_memory_utilization": (float, "--gpu-memory-utilization", "vllm: share of GPU memory the engine may "
                               "take (default: 0.85)"),
    "enforce_eager": (bool, "--enforce-eager", "vllm: skip CUDA graph capture (faster start, slower decoding)"),
    "language_model_only": (bool, "--language-model-only", "vllm: load only the language model of a "
                            "multimodal checkpoint (skips Qwen3.5's vision tower)"),
    "load_format": (str, "--load-format", "vllm: weight loading format passed to vLLM; 'dummy' builds random "
                    "weights (throughput checks without a checkpoint; default: vLLM's own, auto)"),
    "probe_after_s": (float, "--endpoint-cooldown", "openai: seconds an endpoint that failed 3 times in a row "
                      "stays out of rotation before one request probes it, doubling while it fails (default: 10)"),
}
_SERVERS = "for openai, start the servers with it: vllm serve ... --tensor-parallel-size N"


@dataclass
class BackendConfig:
    """Everything a backend may need; each backend reads the fields it uses."""

    name: str = _f("synth", "the model backend, one of the registered ones (synth: the offline synthesizer; "
                            "each is described in docs/backends.md)", flag="--backend", choices=_backend_names)
    model: str | None = _f(None, "model name or local path (needed by hf, vllm and openai; default: none, "
                                 "synth and replay name their own)")
    temperature: float = _f(0.0, "sampling temperature (0: greedy)")
    top_p: float = _f(1.0, "nucleus sampling p")
    top_k: int | None = _f(None, "top-k sampling (hf, vllm, openai alike; default: the model's generation "
                                 "config, or no top-k when it sets none; 0 turns it off)")
    seed: int = _f(0, "seed for sampling and for every learner")
    max_new_tokens: int = _f(1024, "generation limit per completion")
    batch_size: int = _f(8, "hf: prompts per generate call", flag="--gen-batch-size")
    concurrency: int = _f(8, "openai: requests in flight per endpoint")
    enable_thinking: bool = _f(False, "let Qwen3.5 think before answering (chat template flag)")
    load_in_4bit: bool = _f(False, "hf: 4-bit weights with bitsandbytes (GPU only; vllm refuses it: give vllm "
                                   "a pre-quantized AWQ/GPTQ checkpoint instead)", readers=("hf",),
                            refused_hint="vLLM needs a pre-quantized AWQ/GPTQ checkpoint as `model`: it reads the "
                                         "checkpoint's quantization config")
    dtype: str = _f("auto", "hf, vllm: weight dtype auto (bf16 on GPU, fp32 on CPU), bfloat16, float16 or float32")
    device: str = _f("auto", "hf: auto (cuda when available), cpu, cuda or cuda:N")
    base_url: str | None = _f(None, "openai: endpoint, e.g. http://127.0.0.1:8000/v1; several: comma-separated, "
                                    "the flag repeated, or @FILE (one URL a line), requests spread by outstanding load "
                                    "(default: none; openai needs one)",
                              repeat=",")
    api_key_env: str = _f("OPENAI_API_KEY", "openai: environment variable holding the key")
    request_timeout_s: float = _f(120.0, "openai: seconds per HTTP request", flag="--request-timeout")
    chat_template_kwargs: bool = _f(True, "do not pass enable_thinking to the chat template (openai: omit the "
                                          "chat_template_kwargs field that some servers reject)",
                                    flag="--no-chat-template-kwargs")
    max_retries: int = _f(5, "openai: backoff retries per request once it has tried every endpoint in rotation")
    replay_path: str | None = _f(None, "replay: the trace file whose raw outputs are re-parsed and re-run "
                                       "(default: none; replay needs one)",
                                 flag="--replay")
    import_path: str | None = _f(None, "imported: the import file whose recorded outputs answer each request "
                                       "(docs/import.md; the `import` subcommand sets it; default: none)",
                                 flag="--import-file", readers=("imported",))
    cache_dir: str | None = _f(None, "generation cache directory (default for model backends: "
                                     "ROOT/reports/cache/generations; 'none' disables)")
    # synth only: search budgets count nodes (deterministic); a wall-clock cap per search is off
    # (None) unless asked for, and a search it stops says so (finish_reason "budget")
    synth_write_nodes: int = _f(100, "synth: search nodes for WRITE")
    synth_fix_nodes: int = _f(40_000, "synth: search nodes of a chain's repair search; each FIX continues it "
                                      "with half of them (two repairs search them all; docs/synthesizer.md)")
    synth_compact: bool = _f(False, "synth: write programs compactly (no docstrings, comments or step comments; "
                                    "the same code otherwise, docs/synthesizer.md), the rendering distillation "
                                    "data is made with")
    synth_time_budget_s: float | None = _f(None, "synth: wall-clock cap per search, seconds (default: none, so "
                                                 "traces do not depend on load; a search it stops is recorded as "
                                                 "finish_reason 'budget')", flag="--synth-time-budget")
    # vllm parallelism, passed unchanged to vLLM's own engine arguments (no process farm here):
    # tensor and pipeline parallel split one engine over GPUs, data parallel runs replicas of it
    # (vLLM's AsyncLLM with its own DP coordinator); the executor is "mp" or "ray" (None: vLLM's choice)
    tensor_parallel_size: int = _f(1, "vllm: GPUs one engine's layers are split over (vLLM's "
                                      "tensor_parallel_size; changes floating point, so it is in the cache key)",
                                      readers=("vllm",), refused_hint=_SERVERS)
    pipeline_parallel_size: int = _f(1, "vllm: pipeline stages of one engine (vLLM's pipeline_parallel_size; "
                                        "with Ray, stages may sit on different nodes)",
                                        readers=("vllm",), refused_hint=_SERVERS)
    data_parallel_size: int = _f(1, "vllm: engine replicas, each of tensor x pipeline GPUs, that vLLM balances "
                                    "requests over (vLLM's data_parallel_size, run by its AsyncLLM)",
                                    readers=("vllm",), refused_hint=_SERVERS)
    distributed_executor_backend: str | None = _f(None, "vllm: how vLLM starts its workers: mp (one node) or ray "
                                                        "(a Ray cluster, several nodes); default: vLLM's choice",
                                                  choices=("mp", "ray"), readers=("vllm",))
    # engine options (EXTRA_OPTIONS): vllm reads max_model_len, gpu_memory_utilization,
    # enforce_eager, language_model_only, load_format (and a legacy tensor_parallel_size); openai
    # reads retry_base_s, retry_max_s, fail_threshold, probe_after_s
    extra: dict = _f({}, "engine options, set only when given", options=EXTRA_OPTIONS)

    def __post_init__(self) -> None:
        check(self.temperature >= 0, "temperature", f"must be >= 0 (0: greedy), got {self.temperature}")
        check(0 < self.top_p <= 1, "top_p", f"must be in (0, 1], got {self.top_p}")
        check(self.top_k is None or self.top_k >= 0, "top_k", f"must be >= 0 (0: off), got {self.top_k}")
        for name in ("max_new_tokens", "batch_size", "concurrency", "synth_write_nodes", "synth_fix_nodes"):
            check(getattr(self, name) >= 1, name, f"must be >= 1, got {getattr(self, name)}")
        check(self.request_timeout_s > 0, "request_timeout_s", f"must be > 0, got {self.request_timeout_s}")
        check(self.max_retries >= 0, "max_retries", f"must be >= 0, got {self.max_retries}")
        check(self.synth_time_budget_s is None or self.synth_time_budget_s > 0, "synth_time_budget_s",
              f"must be > 0 seconds, got {self.synth_time_budget_s}")
        check(self.distributed_executor_backend in (None, "mp", "ray"), "distributed_executor_backend",
              f"must be mp or ray, got {self.distributed_executor_backend!r}")
        check(float(self.extra.get("probe_after_s", 1)) > 0, "extra.probe_after_s", "must be > 0")
        for name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
            check(getattr(self, name) >= 1, name, f"must be >= 1, got {getattr(self, name)}")
        for f in fields(self):  # a field only some backends read: refused set on another
            readers = f.metadata.get("readers")
            if readers and self.name not in readers and getattr(self, f.name) != f.default:
                hint = f.metadata.get("refused_hint")
                check(False, f.name, f"only `name` {' or '.join(readers)} reads it, not {self.name}"
                      + (f" ({hint})" if hint else ""))


class PartialGeneration(RuntimeError):
    """Some requests of a batch failed for good (e.g. HTTP 400): ``completions[i]`` is None for
    those and ``errors`` maps their index to a one-line reason. The generation cache stores the
    finished ones before passing the error on, so a rerun pays only for the failed requests."""

    def __init__(self, message: str, completions: list, errors: dict[int, str]):
        super().__init__(message)
        self.completions = completions
        self.errors = errors


class Unanswerable(KeyError):
    """A request this backend can never answer (a replayed run never made that generation): the
    run stops and keeps the records before it. ``field``: the ``BackendConfig`` field at fault."""

    field: str | None = None

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class Backend(ABC):
    """A model backend. Subclasses implement ``generate``; ``close`` frees resources."""

    name: str = "base"
    # capabilities the pipeline asks (it never names a backend):
    deterministic: bool = False  # same requests, same completions; K > 1 samples differ even at temperature 0
    caches_generations: bool = True  # completions kept in the generation cache (reports/cache/generations)
    loads_model: bool = False  # opening it loads weights (minutes for a large model): the run names that stage
    # the headroom probe's own kind (it traces with the synthesizer): the run's backend then
    # answers the probe, so the probe's direct answers and first programs are made once
    shares_probe: bool = False
    # its outputs answer the prompts this toolkit writes (False: the imported backend's were made
    # elsewhere, so its records name no prompt template version)
    writes_prompts: bool = True

    @classmethod
    def check_config(cls, config: BackendConfig) -> None:
        """Refuse settings this backend cannot work with, before a run reads or writes anything:
        raise ``ConfigError`` naming the field. Cheap: no model is loaded, no network asked."""

    @classmethod
    def preflight(cls, config: BackendConfig) -> None:
        """What would make building the backend fail slowly (a model neither on disk nor
        reachable), checked fast: raise ``ValueError`` with one line."""

    @classmethod
    def request_slice(cls, config: BackendConfig) -> int:
        """Requests per ``generate`` call when the rollout leaves it to the backend
        (``RolloutConfig.request_slice`` 0); 0: each round of a wave whole."""
        return 0

    @classmethod
    def trace_settings(cls, config: BackendConfig) -> dict:
        """The settings of ``config``, beyond the sampling ones every backend reads, that change
        this backend's traces: part of the run's ``trace_config``, so ``--resume`` refuses a change."""
        return {}

    def __init__(self, config: BackendConfig):
        self.config = config

    def check_cases(self, case_ids: list[str]) -> None:
        """Refuse, before a run writes anything, cases this backend cannot trace: raise
        ``ConfigError`` naming the field at fault (by default every case can be traced)."""

    @property
    def model_name(self) -> str:
        return self.config.model or self.name

    # True when ``generate_iter`` hands out answers as they finish (the rollout then sends a whole
    # wave at once and checks answers while the rest are made)
    streams: bool = False
    # set by the rollout while it traces: hears ``n`` more requests of the running call finish, as
    # they finish (hf: a sequence's stop token inside a batch; vllm and openai: each request), so
    # progress moves during a long call; a backend that never calls it is counted when it answers
    on_request_done: Callable[[int], None] | None = None
    # likewise: hears (tokens decoded so far, the limit) of the batch decoding now (hf), so a batch
    # whose rows all run to --max-new-tokens (they finish together) still shows it moving
    on_decode_step: Callable[[int, int], None] | None = None

    def report_done(self, n: int = 1) -> None:
        """``n`` more requests of the running ``generate`` call finished (any thread may call it)."""
        hook = self.on_request_done
        if hook is not None and n > 0:
            hook(n)

    def report_step(self, tokens: int, limit: int) -> None:
        """The batch decoding now has ``tokens`` of at most ``limit`` new tokens."""
        hook = self.on_decode_step
        if hook is not None:
            hook(tokens, limit)

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

    def record_extras(self, case_id: str) -> dict:
        """Top-level keys this backend adds to a case's record (the imported backend: ``source``,
        the file and line the case came from); none by default."""
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
