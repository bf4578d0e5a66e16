"""The "resample instead of repair" baseline, matched to the tool-using policies in program
generations (not in work).

Re-expressed on the tree: it is the state-machine policy ``policies.ResampleVisible`` (WRITE, then
RESAMPLE while no program passes, up to 1 + max_repairs generations, never FIX; PROGRAM on the
first pass, else DIRECT), simulated like every other policy. It needs ``--program-samples`` K > 1.
"""
from __future__ import annotations

from typing import Sequence

from controller.env.policies import ResampleVisible
from controller.env.simulate import simulate
from controller.env.state import chains

NAME = ResampleVisible.name


def has_samples(records: Sequence[dict]) -> bool:
    """Every record holds at least one extra program sample (K > 1)."""
    return bool(records) and all(len(chains(r)) > 1 for r in records)


def resample_outcomes(records: Sequence[dict]) -> list[dict]:
    return simulate(ResampleVisible(), records)
