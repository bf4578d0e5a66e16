"""The ``imported`` backend: answer each request with the output a model already produced
elsewhere, as an import file records it (``tracegen.importfile``; docs/import.md).

A request is matched by (case id, kind, round, sample): the direct attempt is the case's first
``direct`` answer, WRITE of sample j is ``programs[j][0]`` and its i-th FIX ``programs[j][i]``.
Nothing is generated now, so the rollout runs, checks and grades the recorded outputs exactly as
it does a live model's (one path: the same sandbox runs, grading and record writing):

* ``{"text"}`` comes back as the completion's text and is parsed as the toolkit's own outputs are;
  ``{"answer"}`` and ``{"code"}`` come back as ``Completion.given``, taken as already parsed;
* a request the file holds no output for (a chain the source stopped, a sample it never drew, a
  case without direct answers) comes back ``absent``: the rollout ends that chain there, without a
  round, and a case without direct answers records an empty direct answer that commits nothing;
* outputs the rollout never asks for are dropped and counted (``unused``): the rest of a chain
  after its first program that passes every public example (the source kept going, e.g. because
  its harness graded against the hidden answer), repairs beyond ``--max-repairs``, direct answers
  after the first.

Tokens, log-probabilities, finish reasons, the model and the prompt of each attempt come back
with it when the file gives them; timing only when it gives ``gen_ms``.
"""
from __future__ import annotations

from .base import Backend, BackendConfig, Completion, GenerationRequest
from tracegen.errors import ConfigError
from tracegen.importfile import NOT_RECORDED, UNKNOWN_MODEL


def _completion(attempt) -> Completion:
    meta = attempt.meta
    tokens = meta.get("tokens", {})
    lp = meta.get("logprobs")
    prov = {k: meta[k] for k in ("model", "prompt") if k in meta}
    return Completion(
        text=attempt.value if attempt.kind == "text" else "",
        prompt_tokens=tokens.get("prompt", 0), completion_tokens=tokens.get("completion", 0),
        latency_ms=meta.get("gen_ms"),  # None: the source recorded no timing
        finish_reason=meta.get("finish_reason", "stop"), cached=True,
        logprobs={**lp, "source": "imported"} if lp is not None else None,
        given=None if attempt.kind == "text" else (attempt.value,),
        provenance=prov,  # set (if empty): the output was made elsewhere
    )


def _models(case) -> list[str]:
    """The models a case's attempts name, each once, in the order they appear."""
    return list(dict.fromkeys(a.meta["model"] for a in (*case.direct, *(x for ch in case.programs for x in ch))
                              if "model" in a.meta))


def absent() -> Completion:
    """No output was recorded for this request (the replay of an imported run answers the same)."""
    return Completion(text="", prompt_tokens=0, completion_tokens=0, latency_ms=None, finish_reason=NOT_RECORDED,
                      cached=True, absent=True)


class ImportedBackend(Backend):
    name = "imported"
    deterministic = True
    caches_generations = False
    writes_prompts = False

    @classmethod
    def trace_settings(cls, config: BackendConfig) -> dict:
        """The file's content (a digest): resuming an import of a changed file is refused."""
        import hashlib

        try:
            with open(config.import_path or "", "rb") as fh:
                return {"import_digest": hashlib.sha256(fh.read()).hexdigest()[:16]}
        except OSError:
            return {}

    def __init__(self, config: BackendConfig, source=None):
        """``source``: an ``ImportFile`` already read (the ``import`` command's), else the file
        named by ``config.import_path`` is read now."""
        super().__init__(config)
        if source is None:
            from tracegen.importfile import ImportFileError, read_import_file

            if not config.import_path:
                raise ConfigError("the imported backend needs one (an import file, docs/import.md)", "import_path")
            try:
                source = read_import_file(config.import_path)
            except ImportFileError as err:
                raise ConfigError(str(err), "import_path") from None
        self.source = source
        self.cases = {c.case_id: c for c in source.cases}
        self.asked: set[tuple] = set()  # (case_id, kind, round, sample) answered with a recorded output
        models = list(dict.fromkeys(m for c in source.cases for m in _models(c)))
        self._model = ", ".join(models) if models else UNKNOWN_MODEL

    def check_cases(self, case_ids: list[str]) -> None:
        missing = [c for c in case_ids if c not in self.cases]
        if missing:
            raise ConfigError(f"{self.source.path} holds no line for {len(missing)} of the {len(case_ids)} cases to "
                              f"trace (e.g. {missing[0]!r})", "import_path")

    @property
    def model_name(self) -> str:
        return self.config.model or self._model

    def attempt(self, case_id: str, kind: str, rnd: int, sample: int):
        """The recorded attempt answering that request, or None."""
        case = self.cases.get(case_id)
        if case is None:
            return None
        if kind == "direct":
            return case.direct[0] if sample == 0 and case.direct else None
        chain = case.programs[sample] if sample < len(case.programs) else ()
        return chain[rnd] if rnd < len(chain) else None

    def record_extras(self, case_id: str) -> dict:
        """The file and line a case came from, and its own model: those of its attempts, in order
        (``unknown`` when the file names none; each attempt's own is in its part of the record)."""
        case = self.cases[case_id]
        return {"model": self.config.model or ", ".join(_models(case)) or UNKNOWN_MODEL,
                "source": {"file": self.source.name, "line": case.line}}

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        out = []
        for r in requests:
            a = self.attempt(r.task.case_id, r.kind, r.round, r.sample)
            if a is None:
                out.append(absent())
                continue
            self.asked.add((r.task.case_id, r.kind, r.round, r.sample))
            out.append(_completion(a))
        return out
