"""Controllers over visible tool state: state, policies, training (rule, LoRA, DAgger),
simulation, metrics, reports and figures."""
from controller.env.oracle import oracle_label
from controller.env.policies import AlwaysTool, DirectOnly, Oracle, VisibleDisagree, WriteOnce
from controller.env.registry import REGISTRY, fixed_policies
from controller.env.simulate import InvalidAction, simulate
from controller.env.state import ACTIONS, FEATURE_NAMES, State, valid_actions, visible_state, visible_view

__all__ = [
    "ACTIONS", "FEATURE_NAMES", "State", "valid_actions", "visible_state", "visible_view",
    "REGISTRY", "fixed_policies", "AlwaysTool", "DirectOnly", "Oracle", "VisibleDisagree", "WriteOnce",
    "oracle_label", "simulate", "InvalidAction",
]
