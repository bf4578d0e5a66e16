"""Controllers over visible tool state: state, policies, training (rule, LoRA, DAgger),
simulation, metrics, reports and figures."""
from .oracle import oracle_label
from .policies import FIXED_POLICIES, AlwaysTool, DirectOnly, Oracle, VisibleDisagree, WriteOnce
from .simulate import InvalidAction, simulate
from .state import ACTIONS, FEATURE_NAMES, State, valid_actions, visible_state, visible_view

__all__ = [
    "ACTIONS", "FEATURE_NAMES", "State", "valid_actions", "visible_state", "visible_view",
    "FIXED_POLICIES", "AlwaysTool", "DirectOnly", "Oracle", "VisibleDisagree", "WriteOnce",
    "oracle_label", "simulate", "InvalidAction",
]
