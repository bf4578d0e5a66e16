"""The one registry of policy names: each policy's role, whether it needs K > 1 samples, and
the order reports and figures list policies in (the order here).

Roles:

* ``fixed``: a rule written by hand that reads only visible state (built by ``make``);
* ``learned``: a controller trained on the traces (``controller.learn``);
* ``null``: a learned baseline that shows what a learner gets for free (majority action, the
  rule trained on weaker state sets): counted among the learners by the routing baselines;
* ``control``: a learner trained on shuffled labels: never deployable, never a learner;
* ``oracle``: the hindsight oracle, which reads hidden answers: a ceiling, never deployable.

Every list of policy names in the toolkit derives from this table; a new policy is added here
once (see docs/development.md#adding-a-policy).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from controller.env import policies as P

ROLES = ("fixed", "learned", "null", "control", "oracle")
ORACLE = "oracle_seq"


@dataclass(frozen=True)
class PolicySpec:
    name: str
    role: str
    make: Callable | None = None   # fixed policies: a factory taking no argument
    needs_samples: bool = False    # only meaningful with --program-samples K > 1
    seeded: bool = False           # retrained for every learner seed (``--seeds``)


def _specs() -> tuple[PolicySpec, ...]:
    fixed = lambda cls, **kw: PolicySpec(cls.name, "fixed", cls, **kw)
    return (
        fixed(P.DirectOnly),
        fixed(P.AlwaysTool),
        fixed(P.VisibleDisagree),
        PolicySpec("learned_rule", "learned", seeded=True),
        PolicySpec("lora_seq_policy", "learned", seeded=True),
        PolicySpec("lora_shuffled_seq", "control", seeded=True),
        PolicySpec(ORACLE, "oracle"),
        fixed(P.CrossCheck, needs_samples=True),
        PolicySpec("learned_rule_bc_all", "null"),
        PolicySpec("learned_rule_bc_oracle", "null"),
        PolicySpec("learned_rule_dagger", "learned", seeded=True),
        PolicySpec("learned_rule_shuffled", "control"),
        PolicySpec("lora_dagger", "learned", seeded=True),
        PolicySpec("majority_action", "null"),
        fixed(P.ResampleVisible, needs_samples=True),
        fixed(P.WriteOnce),
    )


REGISTRY: dict[str, PolicySpec] = {s.name: s for s in _specs()}
assert all(s.role in ROLES for s in REGISTRY.values())


def names(*roles: str) -> tuple[str, ...]:
    """Registered names of these roles (all with none), in registry order."""
    return tuple(n for n, s in REGISTRY.items() if not roles or s.role in roles)


def role(name: str) -> str | None:
    spec = REGISTRY.get(name)
    return spec.role if spec else None


def fixed_policies(*, chain: bool = True, samples: bool = False) -> dict:
    """Fresh instances of the fixed policies: with ``chain`` those that work at K = 1, with
    ``samples`` those that need K > 1 (RESAMPLE)."""
    return {s.name: s.make() for s in REGISTRY.values() if s.role == "fixed"
            and (samples if s.needs_samples else chain)}


def deployable(name: str) -> bool:
    """Not the oracle nor a shuffled-label control (unregistered names count as deployable)."""
    return role(name) not in ("oracle", "control")


def is_learner(name: str) -> bool:
    """Trained on the traces and deployable (learned or null); unregistered names count as learners."""
    return role(name) in ("learned", "null", None)


def ordered(policies: Mapping | list) -> list[str]:
    """Policies in report order: the registered ones first, then any others alphabetically."""
    known = [p for p in REGISTRY if p in policies]
    return known + sorted(p for p in policies if p not in REGISTRY)
