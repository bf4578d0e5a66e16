"""Controller policies: each maps a batch of visible states to actions.

Fixed policies read only ``State.features``; the oracle is the one policy that looks up hidden
grades (it is the ceiling, never deployed). Learned policies live in ``rule.py`` and ``lora.py``
and are wrapped here so simulation treats every policy the same way.
"""
from __future__ import annotations

from typing import Protocol, Sequence

from controller.env.oracle import best_action, tree_search
from controller.env.state import State


class Policy(Protocol):
    name: str

    def act(self, states: Sequence[State]) -> list[str]: ...


class _PerState:
    name = "base"

    def act(self, states):
        return [self.choose(s) for s in states]


class DirectOnly(_PerState):
    """Always commit the direct answer: no tools."""

    name = "direct_only"

    def choose(self, s: State) -> str:
        return "DIRECT"


class AlwaysTool(_PerState):
    """Write, repair while the public example fails, commit any program that passes it."""

    name = "always_tool_visible"

    def choose(self, s: State) -> str:
        for a in ("WRITE", "FIX", "PROGRAM"):
            if a in s.valid_actions:
                return a
        return "DIRECT"


class VisibleDisagree(_PerState):
    """Like always-tool, but commit the program only when its output disagrees with the direct answer."""

    name = "visible_disagree_rule"

    def choose(self, s: State) -> str:
        if "PROGRAM" in s.valid_actions:
            return "DIRECT" if s.features["prog_equals_direct"] else "PROGRAM"
        for a in ("WRITE", "FIX"):
            if a in s.valid_actions:
                return a
        return "DIRECT"


class WriteOnce(_PerState):
    """Baseline with the smallest tool budget: one program generation, never repair."""

    name = "write_once"

    def choose(self, s: State) -> str:
        if s.revealed == 0 and "WRITE" in s.valid_actions:  # a case with no program recorded: DIRECT
            return "WRITE"
        return "PROGRAM" if "PROGRAM" in s.valid_actions else "DIRECT"


class RepairAtMost(_PerState):
    """A fixed repair budget: write, repair while the public example fails and fewer than ``r``
    repairs of this program were made, commit a passing program, else answer directly.
    ``r`` = 0 is ``write_once``; ``r`` >= the traces' max repairs is ``always_tool_visible``."""

    def __init__(self, r: int):
        self.r = int(r)
        self.name = f"repair_at_most_{self.r}"

    def choose(self, s: State) -> str:
        valid = s.valid_actions
        if "WRITE" in valid:
            return "WRITE"
        if "PROGRAM" in valid:
            return "PROGRAM"
        if "FIX" in valid and s.features["revealed"] - 1 < self.r:
            return "FIX"
        return "DIRECT"


class DirectIfShapeFits(_PerState):
    """Answer directly when the direct answer has the shape the public example predicts (its
    columns as the example's output, its rows as the example's in -> out row ratio applied to the
    new input); otherwise always-tool. Reads only visible arithmetic on table shapes."""

    name = "direct_if_shape_fits"

    def choose(self, s: State) -> str:
        f = s.features
        # a task whose values have no rows or columns has no such features: never a shape fit
        if s.revealed == 0 and f["direct_parsed"] and f.get("direct_cols_match_example", 0.0) \
                and abs(f.get("direct_rows_vs_ratio", 1.0)) < 1e-9:
            return "DIRECT"
        return AlwaysTool.choose(self, s)


class CrossCheck(_PerState):
    """Always-tool with a cross-check: after the first program passes the public example, draw one
    more independent program (RESAMPLE, not repaired) and commit only on agreement.

    * the check passes and its output on the new input agrees with the first program's: PROGRAM;
    * the check passes and disagrees: DIRECT (the example does not pin the transformation down,
      so neither program is trusted over the direct answer);
    * the check fails the public example: PROGRAM (a failed check is no evidence against the
      program that passed); with no sample left (K = 1) it is always-tool.
    """

    name = "cross_check"

    def choose(self, s: State) -> str:
        f, valid = s.features, s.valid_actions
        if "WRITE" in valid:
            return "WRITE"
        if not f["passing_programs"]:
            return "FIX" if "FIX" in valid else "DIRECT"
        if f["samples_drawn"] == 1 and "RESAMPLE" in valid:
            return "RESAMPLE"
        if f["distinct_passing_outputs"] > 1:
            return "DIRECT"
        return "PROGRAM"


class ResampleVisible(_PerState):
    """Resample instead of repair, at most as many program generations as the repairing policies
    (not the same work: a synth WRITE searches far fewer nodes than a FIX): write one program,
    and while no program passes the public example draw the next independent sample (never FIX),
    up to 1 + max_repairs generations; commit the first program that passes, else DIRECT. Needs
    ``--program-samples`` K > 1 (with K = 1 it is ``write_once``)."""

    name = "resample_visible"

    def choose(self, s: State) -> str:
        valid = s.valid_actions
        if "WRITE" in valid:
            return "WRITE"
        if "PROGRAM" in valid:
            return "PROGRAM"
        if "RESAMPLE" in valid and s.features["generations_spent"] < 1 + s.features["max_repairs"]:
            return "RESAMPLE"
        return "DIRECT"


class Oracle(_PerState):
    """Hindsight: reads the hidden grades of the records it was given (the ceiling)."""

    def __init__(self, records: Sequence[dict], lam: float = 0.0, cost: str = "generations", name: str = "oracle_seq",
                 commit_any: bool = True):
        self.by_id = {r["case_id"]: r for r in records}
        self.lam, self.cost, self.name, self.commit_any = lam, cost, name, commit_any
        self._search: dict = {}  # case id -> memoised tree search (one per record, built on first use)

    def choose(self, s: State) -> str:
        search = self._search.get(s.case_id)
        if search is None:
            search = self._search[s.case_id] = tree_search(self.by_id[s.case_id], self.lam, self.cost, self.commit_any)
        return best_action(search(s.pos))


class Mixture:
    """DAgger's behaviour policy: the oracle with probability beta, else the learner (seeded).

    ``learner_acted`` collects the keys of the states where the learner's action was taken (the
    draw fell on the learner, whether or not it agreed with the oracle)."""

    def __init__(self, learner: Policy, oracle: Oracle, beta: float, seed: int):
        import random

        self.learner, self.oracle, self.beta = learner, oracle, beta
        self.rng = random.Random(seed)
        self.name = f"mixture({learner.name},beta={beta:.2f})"
        self.learner_acted: set = set()

    def act(self, states):
        learner = self.learner.act(states)
        out = []
        for s, a in zip(states, learner):
            if self.rng.random() < self.beta:
                a = self.oracle.choose(s)
            else:
                self.learner_acted.add(s.key)
            out.append(a)
        return out



