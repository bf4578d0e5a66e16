"""The ``replay`` backend: answer with the raw outputs stored in an earlier trace file.

Use it to re-grade a run with a changed parser or sandbox without paying for generation again:
``--backend replay --replay reports/fresh_traces.jsonl``. Each request is matched by
(case id, kind, round, sample) to the stored raw text: the direct attempt is (``direct``, 0),
``rounds[i]`` is (its ``kind``, its ``round``), by default (``write``, 0) then (``fix``, i).
The stored token counts and generation time come back with it (``cached=True``: nothing was
generated now), so budgets stay comparable with the original run.

A request with no stored output (say the new sandbox fails a program the old one passed, so a
repair round is asked for that was never generated) raises ``ReplayMissError`` naming it.
Header, status and footer lines (objects with a ``type`` field) are skipped, as is a torn last
line left by a killed run.
"""
from __future__ import annotations

import json

from .base import Backend, BackendConfig, Completion, GenerationRequest, Unanswerable
from .imported import absent
from tracegen.errors import ConfigError
from tracegen.importfile import NOT_RECORDED

Key = tuple[str, str, int, int]  # (case_id, kind, round, sample)


class ReplayMissError(Unanswerable):
    """A request the trace file holds no output for."""

    field = "replay_path"


def _completion(part: dict, value_field: str) -> Completion:
    """The stored output of one attempt as the backend that made it gave it: text to parse, or a
    value taken as already parsed (an imported run's ``given`` answers and programs, whose ``raw``
    is empty), or nothing (an imported case without a direct answer: ``absent``)."""
    if part.get("finish_reason") == NOT_RECORDED:
        return absent()
    given = (part.get("parse") or {}).get("status") == "given"
    prov = {k: part[k] for k in ("model", "prompt") if k in part}
    return Completion(
        text=part.get("raw") or "",
        prompt_tokens=int(part.get("prompt_tokens") or 0),
        completion_tokens=int(part.get("completion_tokens") or 0),
        latency_ms=None if part.get("gen_ms") is None else float(part["gen_ms"]),  # None: never timed
        finish_reason=part.get("finish_reason") or "stop",
        cached=True,
        logprobs=dict(part["logprobs"]) if isinstance(part.get("logprobs"), dict) else None,  # kept as traced
        given=(part.get(value_field),) if given else None,
        provenance=prov or None,
    )


def load_replay(path: str) -> tuple[dict[Key, Completion], str | None, set[str]]:
    """Index a trace file's raw outputs; returns (index, the model the trace was made with, the
    cases traced by the ``imported`` backend: for those a request the file holds nothing for is a
    sample or repair the source never made, answered ``absent`` as the import did).
    A file that cannot be used raises ``ConfigError`` naming ``replay_path``, the file and the line."""
    from tracegen.records import READABLE_VERSIONS

    def bad(problem: str) -> ConfigError:
        return ConfigError(f"{path}: {problem}", "replay_path")

    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
    except OSError as e:
        raise ConfigError(f"cannot read replay trace {path}: {e.strerror}", "replay_path") from None
    except UnicodeDecodeError as e:
        raise bad(f"not UTF-8 text (bad byte at offset {e.start})") from None
    index: dict[Key, Completion] = {}
    model, imported = None, set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):
                continue  # torn last line of a killed run
            raise bad(f"line {n} is not valid JSON") from None
        if not isinstance(rec, dict) or "type" in rec or "case_id" not in rec:
            continue
        if "schema_version" in rec and rec["schema_version"] not in READABLE_VERSIONS:
            raise bad(f"line {n} has trace schema version {rec['schema_version']!r}; this toolkit reads versions "
                      f"{', '.join(map(str, READABLE_VERSIONS))}")
        try:
            model = model or rec.get("model")
            cid = rec["case_id"]
            if rec.get("backend") == "imported":
                imported.add(cid)
            if isinstance(rec.get("direct"), dict) and "raw" in rec["direct"]:
                index[(cid, "direct", 0, int(rec["direct"].get("sample", 0)))] = _completion(rec["direct"], "value")
            rounds, samples = rec.get("rounds") or [], rec.get("samples") or []
            if not isinstance(rounds, list) or not isinstance(samples, list):
                raise TypeError("rounds or samples is not a list")
            # sample 0's chain is ``rounds``; sample j's (K > 1) is ``samples[j - 1]``
            for j, chain in enumerate([rounds, *samples]):
                for i, part in enumerate(chain):
                    rnd = int(part.get("round", i))
                    kind = part.get("kind") or ("write" if rnd == 0 else "fix")
                    index[(cid, kind, rnd, int(part.get("sample", j)))] = _completion(part, "code")
        except (AttributeError, TypeError, ValueError) as e:  # a field of the wrong type
            raise bad(f"line {n} is not a trace record the replay can read ({e})") from None
    if not index:
        raise bad("no case records with raw outputs to replay")
    return index, model, imported


class ReplayBackend(Backend):
    name = "replay"
    deterministic = True
    caches_generations = False

    def __init__(self, config: BackendConfig):
        super().__init__(config)
        if not config.replay_path:
            raise ConfigError("the replay backend needs one (a trace file from an earlier run)", "replay_path")
        self.index, self.trace_model, self._imported = load_replay(config.replay_path)
        self._direct = {k[0] for k in self.index if k[1] == "direct"}

    def check_cases(self, case_ids: list[str]) -> None:
        """A replay of a case starts from its stored direct answer: the trace file must hold one."""
        missing = [c for c in case_ids if c not in self._direct]
        if missing:
            raise ConfigError(f"{self.config.replay_path} holds no record of {len(missing)} of the {len(case_ids)} "
                              f"cases to trace (e.g. {missing[0]!r})", "replay_path")

    @property
    def model_name(self) -> str:
        return self.config.model or self.trace_model or self.name

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        out = []
        for r in requests:
            key = (r.task.case_id, r.kind, r.round, r.sample)
            if key not in self.index and key[0] in self._imported:
                out.append(absent())
                continue
            if key not in self.index:
                raise ReplayMissError(
                    f"{self.config.replay_path} has no stored output for case {key[0]!r}, {r.kind} "
                    f"round {r.round} sample {r.sample}: the replayed run asks for a generation the "
                    "original run never made (a changed sandbox, or --max-repairs / --program-samples other than "
                    "the replayed run's?)")
            out.append(self.index[key])
        return [Completion(**vars(c)) for c in out]  # copies: callers may annotate them
