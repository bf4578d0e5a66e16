"""The model's confidence as a learner input, and the switch that turns it off.

Where a trace records token log-probabilities (``tracegen.backends.logprobs``), the visible state
carries ``LOGPROB_FEATURE_NAMES`` (``state._logprob_features``), absent where not recorded. The
learners read them by default (``state.features_for`` adds each one some training state has; a
state without it gives NaN, which the rule's trees and forests route natively and its logistic
model imputes with a missing-indicator: never a fake zero); the LoRA policy reads them on the
state text's ``confidence:`` line. ``--no-confidence`` (``ExperimentConfig.confidence`` False)
analyses records with the log-probabilities taken out (``without_confidence``), exactly as if the
backend had recorded none.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from controller.env.state import LOGPROB_FEATURE_NAMES


def _strip(part: Mapping) -> dict:
    return {k: v for k, v in part.items() if k != "logprobs"}


def without_confidence(record: Mapping) -> dict:
    """A shallow copy of ``record`` whose direct answer and program rounds carry no ``logprobs``."""
    out = dict(record)
    out["direct"] = _strip(record["direct"])
    out["rounds"] = [_strip(r) for r in record["rounds"]]
    if record.get("samples"):
        out["samples"] = [[_strip(r) for r in chain] for chain in record["samples"]]
    return out


def records_for_learners(records: Sequence[Mapping], confidence: bool) -> list:
    """The records the learners see: as they are, or without log-probabilities (``--no-confidence``)."""
    return list(records) if confidence else [without_confidence(r) for r in records]


def has_confidence(states) -> bool:
    """Some state carries a confidence feature (the traces recorded log-probabilities)."""
    return any(n in s.features for s in states for n in LOGPROB_FEATURE_NAMES)


def records_have_confidence(records: Sequence[Mapping]) -> bool:
    """Some direct answer or program round of ``records`` recorded token log-probabilities."""
    from tracegen.backends.logprobs import recorded

    def parts(r):
        yield r["direct"]
        yield from r["rounds"]
        for chain in r.get("samples") or ():
            yield from chain

    return any(recorded(p) is not None for r in records for p in parts(r))
