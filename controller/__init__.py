"""Controllers over visible tool state: state, policies, training (rule, LoRA, DAgger),
simulation, metrics, reports and figures.

The Python API (docs/api.md): ``run(RunConfig(...))`` is the whole command; ``analyze(records,
ExperimentConfig(...))`` is the study alone on trace records. Both load on first use, so
``import controller`` stays light."""
from controller.env.oracle import oracle_label
from controller.env.policies import AlwaysTool, DirectOnly, Oracle, VisibleDisagree, WriteOnce
from controller.env.registry import REGISTRY, fixed_policies
from controller.env.simulate import InvalidAction, simulate
from controller.env.state import ACTIONS, FEATURE_NAMES, State, valid_actions, visible_state, visible_view
from controller.learn import registry as _learners  # noqa: F401  (the learners add their policies to REGISTRY)

__all__ = [
    "ACTIONS", "FEATURE_NAMES", "State", "valid_actions", "visible_state", "visible_view",
    "REGISTRY", "fixed_policies", "AlwaysTool", "DirectOnly", "Oracle", "VisibleDisagree", "WriteOnce",
    "oracle_label", "simulate", "InvalidAction",
    "run", "analyze", "RunConfig", "ExperimentConfig", "LoraPolicyConfig", "BackendConfig", "RolloutConfig",
    "ConfigError", "UsageError",
]

_LAZY = {"run": "controller.pipeline", "analyze": "controller.pipeline", "RunConfig": "controller.config",
         "UsageError": "controller.checks", "ExperimentConfig": "controller.study.experiment",
         "LoraPolicyConfig": "controller.learn.lora", "BackendConfig": "tracegen.backends",
         "RolloutConfig": "tracegen.rollout", "ConfigError": "tracegen.errors"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'controller' has no attribute {name!r}")
