"""Per-generation token log-probability statistics: the confidence signal a controller may read.

A completion of a model backend carries ``logprobs``, a small dict written into the trace
record as the generation's ``logprobs`` field (schema v3):

- recorded: ``{"mean": m, "min": lo, "sum": s, "tokens": n, "source": backend}`` over the
  log-probabilities (natural log) of the answer's ``n`` generated tokens, the stop token left out
  (servers leave it out of their logprobs too), each under the model's next-token distribution
  before temperature, top-k and top-p (hf: after the generation config's own processors, such as a
  repetition penalty, when it sets any). ``n = 0`` (an empty answer) gives ``mean`` and ``min``
  ``None``.
- not available: ``{"unavailable": reason, "source": backend}`` (an openai server that ignored
  or refused the ``logprobs`` field): the trace says so, and no statistic is made up.
- absent (no ``logprobs`` key at all): the backend records none (synth; traces older than v3).

Consumers never read a missing statistic as 0: ``controller/env/state.py`` leaves the feature out.
"""
from __future__ import annotations

import math


def logprob_stats(values, source: str) -> dict:
    """The statistics of one answer's token log-probabilities ``values`` (floats, natural log)."""
    vals = [float(v) for v in values]
    if any(not math.isfinite(v) for v in vals):  # -inf: a token the processors had masked out
        vals = [v if math.isfinite(v) else -1e4 for v in vals]
    n = len(vals)
    return {"mean": round(sum(vals) / n, 6) if n else None, "min": round(min(vals), 6) if n else None,
            "sum": round(sum(vals), 6), "tokens": n, "source": source}


def unavailable(reason: str, source: str) -> dict:
    return {"unavailable": reason, "source": source}


def recorded(part: dict | None) -> dict | None:
    """A generation's statistics when it has them (``mean`` set), else None (absent or unavailable)."""
    lp = (part or {}).get("logprobs")
    return lp if isinstance(lp, dict) and lp.get("mean") is not None else None


def unavailable_in(records: list[dict]) -> dict | None:
    """How many of the records' generations say their log-probabilities are ``unavailable``, of how
    many, and why (None: none says so): a run's summary and report name it."""
    parts = [p for r in records for p in [r.get("direct"), *r.get("rounds", [])] if isinstance(p, dict)]
    reasons = sorted({p["logprobs"]["unavailable"] for p in parts
                      if isinstance(p.get("logprobs"), dict) and "unavailable" in p["logprobs"]})
    if not reasons:
        return None
    n = sum(1 for p in parts if isinstance(p.get("logprobs"), dict) and "unavailable" in p["logprobs"])
    return {"generations": n, "of": len(parts), "reasons": reasons}
