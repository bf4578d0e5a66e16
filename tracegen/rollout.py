"""The rollout loop: attempt every case wave by wave so model backends get whole batches.

For each chunk of ``wave_size`` cases: one wave of direct prompts, then one wave of first
programs (WRITE) for every program sample j < ``program_samples`` of every case, then one wave per
repair round (FIX) for the (case, sample) chains whose program still fails the public example:
one backend call per wave across cases and samples. The record holds the whole tree: sample 0's
chain in ``rounds`` and, with K > 1, samples 1..K-1's chains in ``samples`` (schema v2). Every
parsed program runs in the sandbox on every public example and on the new input, in one batch per
wave, streamed (``Sandbox.iter_many``, with the task's value type as the sandbox kind and its entry
function); it passes when it reproduces every example (``cases.values_equal``). Each round records
the repair feedback its prompt showed (``feedback``, schema v4). Records are appended in case order
once their chunk is done.

Recorded outputs (the ``imported`` backend, docs/import.md) go through the same loop: an answer or
program the backend gives already parsed (``Completion.given``) is taken as it is; a request it
holds nothing for (``Completion.absent``) ends that chain without a round (the record's
``chain_repairs`` then says how far each chain could be repaired; a sample never drawn is no chain
of the record); its attempts keep their provenance (``model``, ``prompt``) and no ``gen_ms`` when
none was recorded. Attempts the source made after a chain's first pass are never asked for.

Memory: a program's output may be 4 MiB of JSON (``sandbox.OutputLimits``), which decodes to tens of MB
of ``str`` objects. Each output is graded as it arrives, then kept only as JSON text in an unnamed
temporary file (``held_outputs.Outputs``) until its case's record is built and written, so the parent holds the
outputs being graded, not every output of the chunk (``benchmarks/bench_parent_memory.py``).

Stopping: when tracing a chunk stops early (Ctrl-C, SIGTERM, which the CLI turns into
``KeyboardInterrupt``, or any error), every case of the chunk that had finished (its direct answer
and every sample passed or out of repairs) is appended first, in case order, one line each as
always, with SIGINT and SIGTERM held back while they are written; then the error goes on. So only
SIGKILL loses a chunk's finished cases, and ``--resume`` traces just the cases not in the file. A
resumed run that leaves the file out of case order (finished cases written ahead of unfinished
ones) puts it back in case order when it completes (``records.reorder_records``), so a run that
was stopped and resumed ends with the same file as one that was not.

Progress: besides finished cases, each stage counts its finished requests (``generations 3/8``):
a backend reports each request as it finishes through ``Backend.on_request_done`` (hf, vllm,
openai, a cache's hits), a streaming backend is counted as it answers, and any other is counted
when its call returns. hf also reports each decoding step (``Backend.on_decode_step``: ``decoding
token 57/96``), since rows cut at ``--max-new-tokens`` all finish with their batch.
"""
from __future__ import annotations

import dataclasses
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from cases import Case, values_equal

from .backends import Backend, GenerationRequest, Task
from .conversations import prompt_digest, prompt_digest_of, round_feedback, round_messages
from .errors import check
from .grading import hidden_block
from .held_outputs import Outputs as _Outputs, Stored as _Stored, loaded as _loaded
from .parse_values import parse_answer
from .parsing import Parsed, parse_code
from .progress import Progress
from .recorded import provenance_into, recorded_parse, timed
from .prompts import describe_feedback, direct_messages, write_messages
from .records import SCHEMA_VERSION, append_record, reorder_records


@dataclass
class RolloutConfig:
    max_repairs: int = field(default=2, metadata={"help": "repair rounds after the first program"})
    exec_timeout_s: float = field(default=1.5, metadata={"help": "seconds per program run in the sandbox",
                                                         "flag": "--exec-timeout"})
    memory_mb: int = field(default=256, metadata={"help": "memory limit per program run"})
    wave_size: int = field(default=64, metadata={
        "help": "cases per wave (a backend batch); Ctrl-C and SIGTERM keep the wave's finished cases, "
                "SIGKILL loses at most one wave"})
    progress_every: int = field(default=0, metadata={
        "help": "print a status line every N traced cases (0: the bar, or a line every 10 s off a terminal)"})
    progress: bool = True  # the run's --no-progress turns it off
    program_samples: int = field(default=1, metadata={
        "help": "independent program samples per case (K), each repaired while failing; K > 1 adds the RESAMPLE "
                "action and the cross_check and resample_visible policies (resample_visible is matched to "
                "always-tool in program generations, not in work); model backends need sampling (--temperature > 0)"})
    repair_history: bool = field(default=False, metadata={
        "help": "repair prompts show every earlier attempt and its feedback, not only the latest (changes FIX "
                "prompts: new generations)"})
    # requests per backend call within a wave (0: the whole wave in one call); with a backend that
    # streams its answers (synth), the whole wave goes in one call and this many answers at a time
    # are checked and counted. Smaller slices let progress advance as cases finish; batching
    # backends (hf, vllm) want whole waves, and hf's batch composition (so its sampling seeds)
    # follows the call, so only synth slices by default.
    request_slice: int = 0
    # The sandbox's optional runtime (``sandbox.Runtime.as_json``: numpy for programs written for
    # it), or None: the standard library only. No flag: an import file asks for it (docs/import.md);
    # a config file may set it ([rollout] sandbox_runtime = {modules = ["numpy"], ...}).
    sandbox_runtime: dict | None = None

    def __post_init__(self) -> None:
        check(self.max_repairs >= 0, "max_repairs", f"must be >= 0, got {self.max_repairs}")
        if self.sandbox_runtime is not None:
            from sandbox.runtime import Runtime

            try:
                Runtime.from_json(self.sandbox_runtime)
            except ValueError as e:
                check(False, "sandbox_runtime", str(e))
        for name in ("exec_timeout_s", "memory_mb", "wave_size", "program_samples"):
            check(getattr(self, name) > 0, name, f"must be > 0, got {getattr(self, name)}")
        for name in ("progress_every", "request_slice"):
            check(getattr(self, name) >= 0, name, f"must be >= 0, got {getattr(self, name)}")


@dataclass
class _Chain:
    """One program sample of one case: its WRITE and FIX rounds (outputs as ``_Stored``)."""

    sample: int
    rounds: list = field(default_factory=list)
    ended: bool = False  # the backend holds no further attempt (an imported chain the source stopped)

    @property
    def solved_visible(self) -> bool:
        return bool(self.rounds) and self.rounds[-1]["visible_pass"]

    @property
    def open(self) -> bool:
        return not (self.solved_visible or self.ended)


@dataclass
class _Attempt:
    case: Case
    split: str
    task: Task
    direct: dict = field(default_factory=dict)
    chains: list = field(default_factory=list)  # _Chain per sample j < program_samples
    outputs: _Outputs | None = None  # the chunk's, shared by its attempts

    @property
    def rounds(self) -> list:
        return self.chains[0].rounds


def _finished(a: _Attempt, cfg: RolloutConfig) -> bool:
    """Is the record of ``a`` complete: its direct answer, and every sample passed or out of repairs?"""
    return bool(a.direct) and all(not ch.open or len(ch.rounds) > cfg.max_repairs for ch in a.chains)


class _Generations:
    """Finished requests of the running stage, for the progress line. The backend's reports
    (``add``, from any thread) and the answers the rollout has in hand (``at_least``) both count;
    the count never passes the stage's requests."""

    def __init__(self, show) -> None:
        self.show, self.done, self.total = show, 0, 0
        self._lock = threading.Lock()

    def start(self, total: int) -> None:
        with self._lock:
            self.done, self.total = 0, total
            self.show(0, total)

    def add(self, n: int = 1) -> None:
        with self._lock:
            self._set(self.done + n)

    def at_least(self, n: int) -> None:
        with self._lock:
            if n > self.done:
                self._set(n)

    def _set(self, n: int) -> None:
        self.done = min(n, self.total)
        self.show(self.done, self.total)


def _answers(backend: Backend, reqs: list[GenerationRequest], gens: _Generations | None):
    """(index, completion) per request: as they finish from a streaming backend, else in order once
    ``generate`` returns; each answer in hand counts as a finished generation."""
    base = gens.done if gens is not None else 0
    if _streams(backend):
        for k, (i, comp) in enumerate(backend.generate_iter(reqs)):
            if gens is not None:
                gens.at_least(base + k + 1)
            yield i, comp
        return
    comps = backend.generate(reqs) if reqs else []
    if gens is not None:
        gens.at_least(base + len(reqs))
    yield from enumerate(comps)


def _task(case: Case) -> Task:
    return Task.of_case(case)


def _run_dict(result, *, with_output: bool) -> dict:
    d = {"ok": result.ok, "error": result.error, "message": result.message, "wall_ms": round(result.wall_ms, 3)}
    if with_output:
        d["output"] = result.output
    return d


def _slices(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)] if size > 0 and items else [items]


def _streams(backend) -> bool:
    """Does ``backend`` hand out answers as they finish? (Anything with a ``generate`` is a backend
    here: one that is not a ``Backend`` subclass does not stream.)"""
    return bool(getattr(backend, "streams", False))


def _direct_wave(backend: Backend, attempts: list[_Attempt], gens: _Generations | None = None) -> None:
    reqs = [GenerationRequest("direct", direct_messages(a.task), a.task) for a in attempts]
    for i, comp in _answers(backend, reqs, gens):
        a = attempts[i]
        parsed = _parsed(comp, a.task, "direct")
        a.direct = {
            "raw": comp.text,
            "value": parsed.value if parsed.status != "failed" else None,
            "parse": {"status": parsed.status, "detail": parsed.detail,
                      **({"wrapper": parsed.wrapper} if parsed.wrapper else {})},
            "prompt_tokens": comp.prompt_tokens,
            "completion_tokens": comp.completion_tokens,
            **timed(comp),
            "finish_reason": comp.finish_reason,
            "search_nodes": int(getattr(comp, "search_nodes", 0)),
        }
        _logprobs_into(a.direct, comp)
        provenance_into(a.direct, comp)


def _parsed(comp, task: Task, kind: str) -> Parsed:
    """The answer (``kind`` "direct") or program of a completion: parsed from its text as every
    model's output is, or as its backend recorded it (``recorded.recorded_parse``)."""
    recorded = recorded_parse(comp)
    if recorded is not None:
        return recorded
    if kind == "direct":
        return _parse_direct(task, comp)
    if comp.finish_reason == DECLINED:
        return Parsed(None, DECLINED, comp.text or "the backend does not attempt this task")
    return parse_code(comp.text, task.entry)


DECLINED = "declined"  # a backend's finish_reason (and then the parse status) for a task it does not attempt


def _parse_direct(task: Task, comp):
    """The direct answer read against the examples' value type; a declined task holds none."""
    if comp.finish_reason == DECLINED:
        return Parsed(None, DECLINED, comp.text or "the backend does not attempt this task")
    return parse_answer(comp.text, task.value_type, task.examples[0].output)


def _logprobs_into(part: dict, comp) -> None:
    """The completion's token log-probability statistics, when its backend gave any (schema v3);
    a backend that records none (synth) leaves the key out: absent, never a made-up zero."""
    lp = getattr(comp, "logprobs", None)
    if lp is not None:
        part["logprobs"] = dict(lp)


def _job(code: str, x, task: Task) -> tuple:
    """A sandbox item: ``(code, x)`` for tables defining ``transform`` (the sandbox's default), else
    with the task's value type as the kind and its entry function."""
    if task.value_type == "table" and task.entry == "transform":
        return code, x
    return code, x, task.value_type, task.entry


def _check_programs(sandbox, attempts: list[_Attempt], reqs: list[GenerationRequest], comps: list,
                    cfg: RolloutConfig) -> list[dict]:
    """Run each completion's program on every public example and on the new input in one sandbox
    batch, and return its round dict per request (outputs as ``_Stored``).

    Results are streamed: a program's round is built as soon as all its runs are in, then its
    outputs go to the chunk's ``_Outputs`` and only the handles stay."""
    parsed = [_parsed(c, a.task, "program") for a, c in zip(attempts, comps)]
    jobs, owners = [], []  # owners[j]: (request index, run slot); the new input's run is the last slot
    for i, (a, p) in enumerate(zip(attempts, parsed)):
        if p.value is not None:  # "failed" and "truncated_thinking" hold no program
            inputs = [ex.input for ex in a.task.examples] + [a.task.test_input]
            jobs += [_job(p.value, x, a.task) for x in inputs]
            owners += [(i, slot) for slot in range(len(inputs))]
    out: list = [None] * len(comps)
    pending: dict[int, dict] = {}  # request index -> the runs in so far, by slot
    for j, res in (sandbox.iter_many(jobs, timeout_s=cfg.exec_timeout_s, memory_mb=cfg.memory_mb) if jobs else ()):
        i, slot = owners[j]
        runs = pending.setdefault(i, {})
        runs[slot] = res
        if len(runs) < len(attempts[i].task.examples) + 1:
            continue
        del pending[i]
        n = len(runs) - 1
        out[i] = _round(attempts[i], reqs[i], comps[i], parsed[i], [runs[k] for k in range(n)], runs[n])
        del res, runs
    for i, (a, req, comp, p) in enumerate(zip(attempts, reqs, comps, parsed)):
        if out[i] is None:
            out[i] = _round(a, req, comp, p, None, None)
    return out


def _visible(a: _Attempt, results: list) -> tuple[dict, list[dict] | None, bool]:
    """(the summary run over every public example, the per-example runs when there are several,
    passed): ``ok`` only when every run ran, the first failure's error and message, times summed;
    the output is the first failing example's (the one the feedback is about), else the first's."""
    examples, one = a.task.examples, len(a.task.examples) == 1
    runs = []
    for ex, res in zip(examples, results):
        run = _run_dict(res, with_output=True)
        if res.ok and not values_equal(res.output, ex.output):
            run["error"], run["message"] = "wrong_output", "output differs from the public example"
        runs.append(run)
    passed = all(r["ok"] and r["error"] is None for r in runs)
    if one:
        return runs[0], None, passed
    k = next((k for k, r in enumerate(runs) if r["error"] is not None), 0)
    first = runs[k]
    message = first["message"] if passed else f"example {k + 1} of {len(runs)}: {first['message']}"
    visible = {"ok": all(r["ok"] for r in runs), "error": first["error"], "message": message,
               "wall_ms": round(sum(r["wall_ms"] for r in runs), 3), "output": first["output"]}
    return visible, [{"ok": r["ok"], "error": r["error"], "message": r["message"], "wall_ms": r["wall_ms"],
                      "output": r["output"]} for r in runs], passed


def _round(a: _Attempt, req: GenerationRequest, comp, p, vis_results, test_res) -> dict:
    """The round dict of one completion from its runs (None, None: no program was found)."""
    runs = None
    if vis_results is not None:
        visible, runs, passed = _visible(a, vis_results)
        test = _run_dict(test_res, with_output=False)
        visible["output"] = a.outputs.put(visible["output"])
        if runs is not None:
            for r in runs:
                r["output"] = a.outputs.put(r["output"])
        test_output = a.outputs.put(test_res.output) if test_res.ok else None
    else:
        msg = f"no program found in the answer: {p.detail}"
        visible = {"ok": False, "error": "parse", "message": msg, "wall_ms": 0.0, "output": None}
        test = {"ok": False, "error": "parse", "message": msg, "wall_ms": 0.0}
        passed, test_output = False, None
    rnd = {
        "round": req.round, "kind": req.kind,
        "feedback": describe_feedback(req.feedback) if req.feedback is not None else None,
        "raw": comp.text,
        "code": p.value,
        "parse": {"status": p.status, "detail": p.detail},
        "visible": visible, "visible_pass": passed, "test": test, "test_output": test_output,
        "prompt_tokens": comp.prompt_tokens, "completion_tokens": comp.completion_tokens,
        **timed(comp), "finish_reason": comp.finish_reason,
        "search_nodes": int(comp.search_nodes),
    }
    if runs is not None:
        rnd["visible_runs"] = runs
    _logprobs_into(rnd, comp)
    provenance_into(rnd, comp)
    return rnd


def _program_wave(backend: Backend, sandbox, items: list[tuple[_Attempt, _Chain]], rnd: int,
                  cfg: RolloutConfig, group: int = 0, gens: _Generations | None = None):
    """Round ``rnd`` for every (case, sample) chain: WRITE at round 0, else FIX with the chain's last
    feedback. Sample j's requests carry ``sample=j`` (its own seed / j-th distinct program).

    Yields the chains that got their round, in groups: with a backend that streams
    (``Backend.streams``), every ``group`` completions (0: all) are checked in the sandbox as they
    come, while the backend works on the rest; otherwise all at once after one ``generate``."""
    reqs = []
    for a, ch in items:
        if rnd == 0:
            reqs.append(GenerationRequest("write", write_messages(a.task), a.task, round=0, sample=ch.sample))
        else:
            # the rounds the prompt shows, decoded for as long as it takes to build it
            shown = [_loaded(r) if cfg.repair_history or k == rnd - 1 else r for k, r in enumerate(ch.rounds)]
            msgs = round_messages(a.task, shown, rnd, cfg.repair_history)  # the one prompt builder
            feedback = round_feedback(a.task, shown[-1])
            # without the produced table (its row diff is in the message), so a wave's requests
            # never hold its outputs decoded
            feedback = feedback and dataclasses.replace(feedback, produced=None)
            del shown
            reqs.append(GenerationRequest("fix", msgs, a.task, round=rnd, previous_code=ch.rounds[-1]["code"] or "",
                                          feedback=feedback, sample=ch.sample))
    batch: list = []
    size = group if group > 0 else len(reqs)
    for k, (i, comp) in enumerate(_answers(backend, reqs, gens)):
        batch.append((i, comp))
        if len(batch) < size and k + 1 < len(reqs):
            continue
        got = [items[i] for i, _ in batch]
        for (_, ch), (_, comp) in zip(got, batch):  # no output recorded: the chain ends here
            ch.ended = ch.ended or bool(getattr(comp, "absent", False))
        kept = [(i, c) for (i, c), (_, ch) in zip(batch, got) if not ch.ended]
        results = _check_programs(sandbox, [items[i][0] for i, _ in kept], [reqs[i] for i, _ in kept],
                                  [c for _, c in kept], cfg)
        for (i, _), rnd_dict in zip(kept, results):
            items[i][1].rounds.append(rnd_dict)
        batch = []
        yield got


def _record(a: _Attempt, backend: Backend, cfg: RolloutConfig, prompts: str) -> dict:
    """The trace record of ``a``, with its outputs decoded from the chunk's ``_Outputs``;
    ``prompts``: the prompt templates' version (``conversations.prompt_digest``)."""
    # a sample the backend recorded nothing for is no chain of the record (an imported case's
    # samples are dense: samples 0..n-1, so only trailing ones are empty)
    drawn = [ch for ch in a.chains if ch.rounds]
    chains = [[_loaded(r) for r in ch.rounds] for ch in drawn] or [[]]
    programs = [r for ch in chains for r in ch]
    parts = [a.direct] + programs
    record = {
        "schema_version": SCHEMA_VERSION,
        "case_id": a.case.case_id, "family": a.case.family, "split": a.split,
        "backend": backend.name, "model": backend.model_name, "max_repairs": cfg.max_repairs,
        # the templates that built its prompts; none for outputs answered to prompts made elsewhere
        **({"prompts": prompts} if getattr(backend, "writes_prompts", True) else {}),
        "task": {"examples": [{"input": e.input, "output": e.output} for e in a.case.examples],
                 "test_input": a.case.test_input, "value_type": a.case.value_type, "entry": a.case.entry},
        "direct": a.direct, "rounds": chains[0],
        "totals": {
            "prompt_tokens": sum(p["prompt_tokens"] for p in parts),
            "completion_tokens": sum(p["completion_tokens"] for p in parts),
            **({"gen_ms": round(sum(p.get("gen_ms", 0.0) for p in parts), 3)} if any("gen_ms" in p for p in parts)
               else {}),
            "sandbox_ms": round(sum(r["visible"]["wall_ms"] + r["test"]["wall_ms"] for r in programs), 3),
        },
        "hidden": hidden_block(a.case, a.direct["value"], [r["test_output"] for r in chains[0]]),
    }
    if cfg.program_samples > 1:
        record["samples"] = chains[1:]
        record["hidden"]["samples"] = [hidden_block(a.case, None, [r["test_output"] for r in ch])["rounds"]
                                       for ch in chains[1:]]
    # the repairs each chain was allowed, where the backend ended one before ``max_repairs``
    # (a failing imported chain the source stopped repairing): FIX is not offered past its end
    allowed = [len(ch.rounds) - 1 if ch.ended and not ch.solved_visible else cfg.max_repairs for ch in drawn]
    if any(n != cfg.max_repairs for n in allowed) or not drawn:
        record["chain_repairs"] = allowed
    if isinstance(backend, Backend):
        record.update(backend.record_extras(a.case.case_id))
    return record


def _attempts(cases: list[Case], split_of: dict[str, str], cfg: RolloutConfig) -> list[_Attempt]:
    outputs = _Outputs()
    chunk = [_Attempt(c, split_of.get(c.case_id, "unassigned"), _task(c), outputs=outputs) for c in cases]
    for a in chunk:
        a.chains = [_Chain(j) for j in range(max(cfg.program_samples, 1))]
    return chunk


def trace_cases(cases: list[Case], split_of: dict[str, str], backend: Backend, sandbox,
                cfg: RolloutConfig, on_progress=None, on_generations=None, on_decoding=None) -> list[dict]:
    """Trace one chunk of cases in waves and return their records (nothing is written).

    ``on_progress(n, stage)`` hears, after each backend call, how many more cases have finished
    (every sample solved on the public example or out of repairs) and which wave is running;
    ``on_generations(done, total)``, how many requests of the running stage have finished;
    ``on_decoding(tokens, limit)``, the decoding steps of a backend that reports them (hf)."""
    chunk = _attempts(cases, split_of, cfg)
    try:
        _trace(chunk, backend, sandbox, cfg, on_progress, on_generations, on_decoding)
        digests = {False: prompt_digest(), True: prompt_digest(values=True)}
        return [_record(a, backend, cfg, prompt_digest_of(a.task, digests)) for a in chunk]
    finally:
        if chunk:
            chunk[0].outputs.close()


def _trace(chunk: list[_Attempt], backend: Backend, sandbox, cfg: RolloutConfig, on_progress=None,
           on_generations=None, on_decoding=None) -> None:
    """Fill in the attempts of ``chunk``: the direct wave, then a wave per program round."""
    report = on_progress or (lambda n, stage: None)
    gens = _Generations(on_generations) if on_generations is not None else None
    hooked = isinstance(backend, Backend) and (gens is not None or on_decoding is not None)
    if hooked:
        backend.on_request_done = gens.add if gens is not None else None
        backend.on_decode_step = on_decoding
    try:
        _waves(chunk, backend, sandbox, cfg, report, gens)
    finally:
        if hooked:
            backend.on_request_done = backend.on_decode_step = None


def _waves(chunk: list[_Attempt], backend: Backend, sandbox, cfg: RolloutConfig, report,
           gens: _Generations | None) -> None:
    report(0, "direct answers")
    if gens is not None:
        gens.start(len(chunk))
    for part in _slices(chunk, cfg.request_slice):
        _direct_wave(backend, part, gens)
    # a streaming backend gets a whole round at once (its pool stays busy across what a slice
    # would end) and is checked in groups of ``request_slice`` as it answers; another backend gets
    # one call per slice
    calls = 0 if _streams(backend) else cfg.request_slice
    # sample-major order: with K = 1 every wave is exactly the pilot's batch
    active = [(a, a.chains[j]) for j in range(max(cfg.program_samples, 1)) for a in chunk]
    open_chains = {id(a): len(a.chains) for a in chunk}
    for rnd in range(cfg.max_repairs + 1):
        if not active:
            break
        stage = "first programs" if rnd == 0 else f"repair round {rnd}"
        report(0, stage)
        if gens is not None:
            gens.start(len(active))
        for part in _slices(active, calls):
            for got in _program_wave(backend, sandbox, part, rnd, cfg, group=cfg.request_slice, gens=gens):
                finished = 0
                for a, ch in got:  # a chain ends when it passes, has used its last repair or has no more
                    if not ch.open or rnd == cfg.max_repairs:
                        open_chains[id(a)] -= 1
                        finished += open_chains[id(a)] == 0
                report(finished, stage)
        active = [(a, ch) for a, ch in active if ch.open]


@contextmanager
def _signals_held():
    """SIGINT and SIGTERM wait (are delivered after the block) while finished records are written,
    so a second Ctrl-C cannot cut the list short; elsewhere than the main thread, a no-op."""
    held = {signal.SIGINT, signal.SIGTERM}
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def rollout(cases: list[Case], split_of: dict[str, str], backend: Backend, sandbox, out_path,
            cfg: RolloutConfig, *, done_ids: frozenset[str] = frozenset()) -> dict:
    """Trace every case not in ``done_ids`` and append its record to ``out_path``.

    Returns counts for the run summary. Records are written in the order of ``cases``; when
    tracing stops early, the finished cases of the chunk in progress are written before the
    error goes on (see the module docstring)."""
    todo = [c for c in cases if c.case_id not in done_ids]
    t0, written, visible_passes = time.monotonic(), 0, 0
    # once: every record of this run names the templates its prompts came from
    digests = {False: prompt_digest(), True: prompt_digest(values=True)}
    bar = Progress(len(todo), "tracing", enabled=cfg.progress, every=cfg.progress_every,
                   eta_after=min(cfg.wave_size, len(todo)))
    waves = -(-len(todo) // cfg.wave_size)

    def tick(n: int, stage: str) -> None:
        bar.set_stage(f"wave {start // cfg.wave_size + 1}/{waves}: {stage}" if waves > 1 else stage)
        bar.update(n)

    def write(rec: dict) -> None:
        nonlocal written, visible_passes
        append_record(out_path, rec)
        written += 1
        visible_passes += bool(rec["rounds"]) and rec["rounds"][-1]["visible_pass"]
        if bar.is_bar and cfg.progress_every and written % cfg.progress_every == 0:
            bar.write(f"[{written}/{len(todo)}] {time.monotonic() - t0:.1f}s, "
                      f"{visible_passes} programs pass their public example")

    try:
        for start in range(0, len(todo), cfg.wave_size):
            chunk = _attempts(todo[start:start + cfg.wave_size], split_of, cfg)
            stopped = True
            try:
                _trace(chunk, backend, sandbox, cfg, tick, bar.set_generations, bar.set_decoding)
                stopped = False
            finally:
                with _signals_held():  # the whole chunk, or when it stopped its finished cases, in case order
                    kept = [a for a in chunk if _finished(a, cfg)] if stopped else chunk
                    for a in kept:
                        write(_record(a, backend, cfg, prompt_digest_of(a.task, digests)))
                    if chunk:
                        chunk[0].outputs.close()
                if stopped:
                    _say(bar, f"tracing stopped: wrote the {len(kept)} finished of the {len(chunk)} cases in the "
                              f"unfinished wave ({written} this run); --resume traces the other "
                              f"{len(todo) - written} of this run's {len(todo)}")
    finally:
        bar.close()
    if done_ids:
        reorder_records(out_path, [c.case_id for c in cases])  # a stopped, resumed run: case order again
    same = identical_samples(out_path, backend, cfg)
    if same:
        _say(bar, f"warning: {same} cases got K = {cfg.program_samples} identical first programs at temperature "
                  f"{backend.config.temperature:g}: the server samples greedily (transformers serve does unless the "
                  f"model's generation_config sets do_sample) or ignores the seed")
    return {"traced": written, "skipped": len(cases) - len(todo), "visible_passes": visible_passes,
            "seconds": round(time.monotonic() - t0, 3), "identical_samples": same}


def identical_samples(path, backend, cfg: RolloutConfig) -> int:
    """Cases of the trace file whose K > 1 first programs are all the same text although sampling
    was asked for (temperature > 0); 0 otherwise. (The synthesizer's samples are distinct by
    construction, so it is not counted.)"""
    temperature = getattr(getattr(backend, "config", None), "temperature", 0.0) or 0.0
    if cfg.program_samples < 2 or temperature <= 0 or getattr(backend, "name", "") == "synth":
        return 0
    from .records import read_traces

    n = 0
    for rec in read_traces(path, validate=False, warn=lambda *a: None):
        firsts = [ch[0]["raw"] for ch in [rec["rounds"], *rec.get("samples", [])] if ch]
        n += len(firsts) > 1 and len(set(firsts)) == 1
    return n


def _say(bar: Progress, text: str) -> None:
    """One line on stderr, beside the bar when there is one (shown with --no-progress too)."""
    if bar.is_bar:
        bar.write(text)
    else:
        print(text, file=sys.stderr, flush=True)
