"""The one registry of policy names: each policy's role, whether it needs K > 1 samples, and
the order reports and figures list policies in (the order here).

Roles:

* ``fixed``: a rule written by hand that reads only visible state (built by ``make``);
* ``learned``: a controller trained on the traces (``controller.learn``);
* ``null``: a learned baseline that shows what a learner gets for free (majority action, the
  rule trained on weaker state sets): counted among the learners by the routing baselines;
* ``control``: a learner trained on shuffled labels: never deployable, never a learner;
* ``oracle``: the hindsight oracle, which reads hidden answers: a ceiling, never deployable.

Every list of policy names in the toolkit derives from this table; a new fixed policy is added
here once (see docs/development.md#adding-a-policy). The learners' policies (learned, null,
control) are added by their learner entries (``controller.learn.registry``) through ``register``,
each at its role's place, so the table lists them in role order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from controller.env import policies as P

ROLES = ("fixed", "baseline", "learned", "null", "control", "oracle")
ORACLE = "oracle_seq"
BEST_FIXED = "best_fixed"
REPAIR_BUDGET = "repair_at_most_"  # + r: one fixed policy per repair budget r = 1 .. max_repairs - 1


@dataclass(frozen=True)
class PolicySpec:
    name: str
    role: str
    make: Callable | None = None   # fixed policies: a factory taking no argument
    needs_samples: bool = False    # only meaningful with --program-samples K > 1
    seeded: bool = False           # retrained for every learner seed (``--seeds``)
    about: str = ""                # its line in the report's table of nulls and imitation baselines
                                   # (a learner on the learned rule's model; empty: not listed there)


def _specs() -> tuple[PolicySpec, ...]:
    fixed = lambda cls, **kw: PolicySpec(cls.name, "fixed", cls, **kw)
    return (
        fixed(P.DirectOnly),
        fixed(P.WriteOnce),
        PolicySpec(REPAIR_BUDGET + "*", "fixed"),  # the repair budgets' place in the order
        fixed(P.AlwaysTool),
        fixed(P.VisibleDisagree),
        fixed(P.DirectIfShapeFits),
        fixed(P.CrossCheck, needs_samples=True),
        fixed(P.ResampleVisible, needs_samples=True),
        PolicySpec(BEST_FIXED, "baseline"),
        PolicySpec(ORACLE, "oracle"),
    )


REGISTRY: dict[str, PolicySpec] = {s.name: s for s in _specs()}
assert all(s.role in ROLES for s in REGISTRY.values())


def register(s: PolicySpec, after: str | None = None) -> PolicySpec:
    """Add a policy to the table: right after ``after`` when given (a learner built on another
    is listed beside it), else after the last policy of its role or an earlier one (report order
    is role order). Registering a name again replaces its entry in place."""
    if s.role not in ROLES:
        raise ValueError(f"policy {s.name!r}: unknown role {s.role!r}; use one of {', '.join(ROLES)}")
    items = [(n, x) for n, x in REGISTRY.items() if n != s.name]
    if s.name in REGISTRY:
        at = list(REGISTRY).index(s.name)
    elif after is not None:
        at = [n for n, _ in items].index(after) + 1
    else:
        rank = ROLES.index(s.role)
        at = max((i + 1 for i, (_, x) in enumerate(items) if ROLES.index(x.role) <= rank), default=0)
    items.insert(at, (s.name, s))
    REGISTRY.clear()
    REGISTRY.update(items)
    return s


def repair_budget(name: str) -> int | None:
    """r of ``repair_at_most_<r>``, else None."""
    tail = name[len(REPAIR_BUDGET):] if name.startswith(REPAIR_BUDGET) else ""
    return int(tail) if tail.isdigit() else None


def spec(name: str) -> PolicySpec | None:
    r = repair_budget(name)
    if r is not None:
        return PolicySpec(name, "fixed", lambda: P.RepairAtMost(r))
    return REGISTRY.get(name) if not name.endswith("*") else None


def names(*roles: str, max_repairs: int = 0) -> tuple[str, ...]:
    """Registered names of these roles (all with none), in registry order; the repair budgets
    ``repair_at_most_1 .. max_repairs - 1`` at their place."""
    out = []
    for n, s in REGISTRY.items():
        if roles and s.role not in roles:
            continue
        out += [f"{REPAIR_BUDGET}{r}" for r in range(1, max_repairs)] if n.endswith("*") else [n]
    return tuple(out)


def role(name: str) -> str | None:
    s = spec(name)
    return s.role if s else None


def fixed_policies(*, chain: bool = True, samples: bool = False, max_repairs: int = 0) -> dict:
    """Fresh instances of the fixed policies: with ``chain`` those that work at K = 1 (the repair
    budgets 1 .. ``max_repairs`` - 1 among them), with ``samples`` those that need K > 1."""
    out = {}
    for n in names("fixed", max_repairs=max_repairs):
        s = spec(n)
        if samples if s.needs_samples else chain:
            out[n] = s.make()
    return out


def deployable(name: str) -> bool:
    """Not the oracle nor a shuffled-label control (unregistered names count as deployable)."""
    return role(name) not in ("oracle", "control")


def is_learner(name: str) -> bool:
    """Trained on the traces and deployable (learned or null); unregistered names count as learners."""
    return role(name) in ("learned", "null", None)


def ordered(policies) -> list[str]:
    """Policies in report order: the registered ones first (repair budgets by r), then any
    others alphabetically."""
    budgets = sorted((p for p in policies if repair_budget(p) is not None), key=repair_budget)
    out = []
    for n in REGISTRY:
        out += budgets if n.endswith("*") else [n] if n in policies else []
    return out + sorted(p for p in policies if p not in out)
