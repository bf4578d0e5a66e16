"""The ``synth`` backend: the offline default "model", a programming-by-example synthesizer.

It reads the structured task of each request (the public example and the new input), never the
hidden answer, and ignores the chat text except to count its tokens:
- ``direct``: the cell-copying guesser's table for the new input, as JSON (``search_nodes`` 0:
  the guesser does not search);
- ``write`` (round 0): a search with ``config.synth_write_nodes`` nodes;
- ``fix`` (repair rounds): repair k of a chain continues the chain's repair search: the search
  (from the empty program and from the prefixes of the chain's first attempt, its WRITE program)
  stopped after k stages of ``config.synth_fix_nodes // FIX_SHARES`` fresh nodes each, from
  exactly where the stage before stopped (its frontier, its kept states, a solution's window).
  The answer is that search's best program not tried before (the tried keys ride along in the
  emitted code's ``# program:`` and ``# tried:`` lines), so a second repair passes when the
  continued search finds what the first one's budget did not reach. It depends on nothing but
  the example, the budget, the sample, the repair's index (``round``, else the attempts its code
  names) and that first attempt. A worker keeps each failing repair's search paused
  (``LIVE_SEARCHES``) and every stage's result (``CACHED_SEARCHES``), and a case's repairs go
  to the worker that ran its first one; a backend without them searches again through every
  stage: the same program, the same ``search_nodes``.
Sample j of a program request is the j-th distinct program consistent with the example in the
search's own ranking (j = 0: the cheapest). Two programs are distinct when their outputs on the
new input differ: two that agree there are useless as a cross-check. When the search finds fewer,
the answer is its closest candidate behaving unlike samples 0..j-1, ``finish_reason`` is
``"exhausted"`` and the text says so. A FIX for sample j applies the same rule to its own search
(its chain's ``# tried:`` history excluded).
The text reads like a model's answer: one sentence, then the code in a fenced python block.
Tasks: the synthesizer's table DSL answers table tasks whose programs define ``transform``; with
several public examples its search must fit every one (the direct guess reads the first). Any other
task (grids, strings, any JSON value, another entry function) is declined: an empty answer with
``finish_reason`` ``"declined"`` at once, for every request kind (the rollout records the direct
answer's parse status as ``declined``; a declined program has no code to run).
``search_nodes`` is the nodes the answer's own stage of the search expanded (a WRITE or a first
repair: the whole search; repair k > 1: its k-th stage), also when a cache served it or when the
earlier stages had to be searched again: the figure is a property of the answer, not of the
run. Output is deterministic (budgets count nodes) and does not depend on caching or on the pool. The one exception is opt-in: with
``config.synth_time_budget_s`` set, a search the wall clock stops answers with what it has and
``finish_reason`` ``"budget"`` (the record then depends on the machine's load).
A batch's program requests run on a pool of worker processes (``extra["synth_workers"]``, default
the usable cores, at most 8; 1 runs in-process), biggest searches first, each to the next free
worker; ``generate`` returns them in request order and ``generate_iter`` as they finish (a
scheduler thread keeps the pool busy meanwhile); the answers do not depend on the pool. Token counts are
counts of the regex ``\\w+|[^\\w\\s]`` over the prompt messages and over the text.
"""
from __future__ import annotations

import gc
import json
import os
import re
import time
from collections import OrderedDict
from typing import Iterator

from tracegen.synth import (choose, describe_step, emit_code, guess_direct, parse_key, read_history, run_program,
                            stages)

from .base import Backend, Completion, GenerationRequest, in_order

_TOKEN = re.compile(r"\w+|[^\w\s]")
MAX_WORKERS = 8
# searches kept per process: a FIX wave's (64 cases x a few samples, over the workers) are still
# there for the next wave; each holds its kept states' programs (a few MB at most)
CACHED_SEARCHES = 128
# repair searches kept alive (paused, frontier and all; ~20 MB each on Foofah) per process, for their
# chain's next repair (a FIX wave's: 64 cases, more than one sample each over the workers);
# one not kept is searched again from the start through its earlier stages (same answer, more time)
LIVE_SEARCHES = 64
# a repair's fresh budget is synth_fix_nodes / FIX_SHARES: two repairs together search as far as one
# repair did before repairs continued (docs/synthesizer.md)
FIX_SHARES = 2


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text or ""))


def _prompt_tokens(messages: list[dict]) -> int:
    return sum(count_tokens(str(m.get("content", ""))) for m in messages)


def _steps_text(program) -> str:
    steps = [describe_step(name, params) for name, params in program]
    if not steps:
        return "return the table unchanged"
    return "; ".join(steps)


def _program_text(kind: str, result, tried_before: bool, sample: int, compact: bool = False) -> str:
    n = len(result.program)
    count = "one step" if n == 1 else f"{n} steps"
    if result.found:
        lead = "The previous program was wrong. " if kind == "fix" else ""
        sentence = f"{lead}This program reproduces the example in {count}: {_steps_text(result.program)}."
    elif result.exhausted:
        sentence = (f"I found {result.distinct} distinct program(s) that reproduce the example, fewer than "
                    f"sample {sample} needs; this is the closest other candidate ({count}): "
                    f"{_steps_text(result.program)}.")
    else:
        lead = "I could not repair the program" if kind == "fix" and tried_before else \
            "I could not find a program that reproduces the example"
        sentence = f"{lead}; this is the closest I found ({count}): {_steps_text(result.program)}."
    if compact:  # the code alone: what a distilled model learns to answer with
        return f"```python\n{result.code}```\n"
    return f"{sentence}\n\n```python\n{result.code}```\n"


def _behaviour(table):
    """What a program does to the new input: its output, or the error it raised."""
    def run(program):
        try:
            return tuple(map(tuple, run_program(table, program)))
        except Exception as exc:  # operators are total; this is only a guard
            return ("error", type(exc).__name__)
    return run


def workers(config) -> int:
    """Pool size: ``extra["synth_workers"]``, else the usable cores (at most ``MAX_WORKERS``)."""
    if "synth_workers" in config.extra:
        return max(1, int(config.extra["synth_workers"]))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, MAX_WORKERS))


DECLINED = "declined"


def declines(task) -> bool:
    """Tasks the table DSL cannot answer: any but string tables transformed by ``transform``."""
    return task.value_type != "table" or task.entry != "transform"


def _cost(req: GenerationRequest) -> int:
    """Rough work of a request, to start the big searches first so the pool ends together."""
    if declines(req.task):
        return 0
    cells = sum(len(r) for r in req.task.input_table) + sum(len(r) for r in req.task.output_table)
    return (10 if req.kind == "fix" else 1) * cells


_WORKER: "SynthBackend | None" = None


def _init_worker(config) -> None:
    global _WORKER
    _WORKER = SynthBackend(config)


def _work(req: GenerationRequest) -> Completion:
    return _WORKER.one(req)


class SynthBackend(Backend):
    """Built-in synthesizer; see the module docstring for what each request kind does."""

    name = "synth"
    deterministic = True
    caches_generations = False  # recomputing is cheaper than a disk cache, and workers keep their own
    shares_probe = True  # the headroom probe traces with the synthesizer: this one answers it
    streams = True

    @classmethod
    def request_slice(cls, config) -> int:
        # it streams its answers (``generate_iter``): the rollout gets each round of a wave whole
        # and checks and counts its answers 8 per worker at a time as they finish, so progress
        # advances within a wave without the pool waiting at each slice's end
        return 8 * workers(config)

    @classmethod
    def trace_settings(cls, config) -> dict:
        # node budgets fix the answers; the opt-in settings enter only when set, so runs made
        # before they existed still resume
        out = {"synth_write_nodes": config.synth_write_nodes, "synth_fix_nodes": config.synth_fix_nodes}
        if config.synth_time_budget_s:  # a wall-clock cap makes the traces depend on load
            out["synth_time_budget_s"] = config.synth_time_budget_s
        if config.synth_compact:
            out["synth_compact"] = True
        return out

    def __init__(self, config):
        super().__init__(config)
        self._pools: list = []
        self._home: dict = {}  # (case, sample) -> the worker that ran its first repair search
        self._searches: OrderedDict = OrderedDict()  # (search, stages) -> Outcome, least recent first
        self._live: dict = {}  # search -> (paused stage generator, its stages' budgets), oldest first

    @property
    def model_name(self) -> str:
        return self.config.model or "synth-pbe"

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        return in_order(self.generate_iter(requests), len(requests))

    def generate_iter(self, requests: list[GenerationRequest]) -> Iterator[tuple[int, Completion]]:
        """Answers as they finish: the direct guesses (in-process) first, then the searches, which
        a scheduler thread keeps handing to the pool however long the caller takes with each
        answer (so checking answers overlaps the searches still running)."""
        # a declined request is answered at once, in-process, like a direct guess
        heavy = [i for i, r in enumerate(requests) if r.kind != "direct" and not declines(r.task)]
        n = workers(self.config)
        # in-process: one worker, or a lone search before any pool exists (a started pool takes
        # even one: a repair's search may be kept in the worker that ran the case's first one)
        if n < 2 or not heavy or (len(heavy) < 2 and not self._pools):
            for i, r in enumerate(requests):
                yield i, self.one(r)
            return
        import queue
        import threading

        pools = self._executors(n)
        answers: queue.Queue = queue.Queue()
        stop = threading.Event()
        thread = threading.Thread(target=self._schedule, args=(requests, heavy, pools, answers.put, stop),
                                  name="synth-scheduler", daemon=True)
        thread.start()
        try:
            for i, r in enumerate(requests):
                if r.kind == "direct" or declines(r.task):
                    yield i, self.one(r)
            for _ in heavy:
                got = answers.get()
                if isinstance(got, BaseException):
                    raise got
                yield got
        finally:
            stop.set()  # a caller that stops early: no new searches start
            thread.join()

    def _schedule(self, requests, heavy: list[int], pools: list, put, stop) -> None:
        """Hand the ``heavy`` requests to the pool's workers, biggest first, and ``put`` each
        (index, completion) as it finishes (or the error that stopped it)."""
        from concurrent.futures import FIRST_COMPLETED, wait

        try:
            todo = sorted(heavy, key=lambda i: (-_cost(requests[i]), i))  # big searches first
            running: dict = {}  # worker -> (future, request index)
            while (todo or running) and not stop.is_set():
                for w in range(len(pools)):
                    if w in running or not todo:
                        continue
                    # a repair goes to the worker that holds its case's search; anything else to
                    # any free worker (the answers are the same either way, only the time differs)
                    pick = next((i for i in todo if self._home.get(_home_key(requests[i]), w) == w), None)
                    if pick is None:
                        continue
                    todo.remove(pick)
                    if requests[pick].kind == "fix":
                        self._home.setdefault(_home_key(requests[pick]), w)
                    running[w] = (pools[w].submit(_work, requests[pick]), pick)
                done, _ = wait([f for f, _ in running.values()], timeout=0.5, return_when=FIRST_COMPLETED)
                for w, (fut, i) in list(running.items()):
                    if fut in done:
                        del running[w]
                        put((i, fut.result()))
        except BaseException as err:  # noqa: BLE001  (raised again in the caller)
            put(err)

    def _executors(self, n: int) -> list:
        if not self._pools:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # forkserver: workers fork from a clean process that imported only the synthesizer,
            # never from the caller (which may hold threads and locks)
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["tracegen.backends.synth"])
            self._pools = [ProcessPoolExecutor(1, mp_context=ctx, initializer=_init_worker, initargs=(self.config,))
                           for _ in range(n)]
        return self._pools

    def close(self) -> None:
        while self._live:
            self._live.pop(next(iter(self._live)))[0].close()
        gc.unfreeze()  # what the paused searches' stages froze (``search._settle``) is collected again
        for pool in self._pools:
            pool.shutdown(wait=True, cancel_futures=True)
        self._pools = []

    def one(self, req: GenerationRequest) -> Completion:
        t0 = time.perf_counter()
        task = req.task
        nodes, finish = 0, "stop"
        if declines(task):
            text, finish = "", DECLINED
        elif req.kind == "direct":
            guess = guess_direct(task.input_table, task.output_table, task.test_table)
            text = json.dumps(guess, ensure_ascii=False)
        elif req.kind in ("write", "fix"):
            text, result = self._program(req)
            nodes = result.nodes
            # a search the optional wall-clock cap stopped is not reproducible: say so first
            finish = "budget" if result.cut_by_time else "exhausted" if result.exhausted else "stop"
        else:
            raise ValueError(f"synth backend: unknown request kind {req.kind!r}")
        return Completion(
            text=text,
            prompt_tokens=_prompt_tokens(req.messages),
            completion_tokens=count_tokens(text),
            latency_ms=(time.perf_counter() - t0) * 1000.0,
            finish_reason=finish,
            search_nodes=nodes,
        )

    def _program(self, req: GenerationRequest):
        cfg = self.config
        tried = read_history(req.previous_code)[1] if req.kind == "fix" else []
        # every repair of a chain continues from the chain's first attempt (the oldest key)
        first = parse_key(tried[-1]) if tried else None
        behaviour = _behaviour(req.task.test_table)
        base = (req.kind, req.sample, _frozen(req.task.input_table), _frozen(req.task.output_table),
                _frozen(req.task.test_table) if req.sample else None, tried[-1] if tried else None)
        if len(req.task.examples) > 1:  # the further examples shape the search too
            base += tuple((_frozen(e.input), _frozen(e.output)) for e in req.task.examples[1:])
        budgets = fix_budgets(cfg, fix_round(req, tried)) if req.kind == "fix" else [cfg.synth_write_nodes]
        found = self._searches.get(base + (tuple(budgets),))
        if found is None:
            found = self._stage(base, budgets, req, [first] if first else [], behaviour)
        else:
            self._searches.move_to_end(base + (tuple(budgets),))
        result = choose(found, exclude=tried, want=req.sample + 1, behaviour=behaviour)
        if result.found and base in self._live:  # this answer passes the example: no repair follows
            self._live.pop(base)[0].close()
        result.nodes = found.spent  # what this round's answer cost: its own stage of the search
        result.code = emit_code(result.program, tried=tried, compact=cfg.synth_compact)
        return _program_text(req.kind, result, bool(tried), req.sample, cfg.synth_compact), result

    def _stage(self, base: tuple, budgets: list[int], req: GenerationRequest, seeds: list, behaviour):
        """The Outcome of the search ``base`` after the stages ``budgets`` (fresh nodes each), every
        stage's Outcome kept. A live search of this chain that stopped at an earlier stage goes on
        from there; else the search starts again and runs through every stage, so the answer and
        each stage's ``spent`` are the same either way."""
        live = self._live.pop(base, None)
        if live is None or list(live[1]) != budgets[:len(live[1])]:
            run = stages([(e.input, e.output) for e in req.task.examples], max_nodes=budgets[0],
                         time_budget_s=self.config.synth_time_budget_s, seeds=seeds, want=req.sample + 1,
                         behaviour=behaviour)
            live, found = (run, budgets[:1]), next(run)
            self._keep(base + (tuple(budgets[:1]),), found)
        run, done = live
        done = list(done)
        while len(done) < len(budgets):
            found = run.send(budgets[len(done)])
            done.append(budgets[len(done)])
            self._keep(base + (tuple(done),), found)
        found = self._searches[base + (tuple(done),)]
        if req.kind == "fix":  # its chain may repair again: keep it going (``_program`` ends it if not)
            self._live[base] = (run, tuple(done))
            while len(self._live) > LIVE_SEARCHES:
                self._live.pop(next(iter(self._live)))[0].close()
        else:
            run.close()
        return found

    def _keep(self, key: tuple, found) -> None:
        self._searches[key] = found
        self._searches.move_to_end(key)
        while len(self._searches) > CACHED_SEARCHES:
            self._searches.popitem(last=False)


def fix_round(req: GenerationRequest, tried: list) -> int:
    """Which repair of its chain a FIX request is: its ``round``, else the attempts its code names."""
    return max(1, req.round or len(tried))


def fix_budgets(config, rnd: int) -> list[int]:
    """The fresh nodes of each stage of a chain's repair search up to repair ``rnd``: every repair
    gets ``synth_fix_nodes // FIX_SHARES`` more (at least one), continuing the search before it."""
    return [max(1, config.synth_fix_nodes // FIX_SHARES)] * rnd


def _home_key(req: GenerationRequest) -> tuple:
    return req.task.case_id, req.sample


def _frozen(table) -> tuple:
    return tuple(map(tuple, table))
