"""Model backends behind one interface, registered by name and imported only when chosen."""
from __future__ import annotations

import importlib

from tracegen.errors import ConfigError

from .base import (Backend, BackendConfig, Completion, Feedback, GenerationRequest, PartialGeneration, Task,
                   Unanswerable)

# name -> "module:Class"; heavy modules (torch, vllm, http) load only when their backend is chosen
_REGISTRY: dict[str, str] = {
    "synth": "tracegen.backends.synth:SynthBackend",
    "hf": "tracegen.backends.hf:HFBackend",
    "vllm": "tracegen.backends.vllm_backend:VLLMBackend",
    "openai": "tracegen.backends.openai_backend:OpenAIBackend",
    "replay": "tracegen.backends.replay:ReplayBackend",
    "imported": "tracegen.backends.imported:ImportedBackend",
}


def available_backends() -> list[str]:
    return sorted(_REGISTRY)


def backend_class(name: str) -> type[Backend]:
    """The class registered as ``name`` (its capabilities are class attributes); ``ValueError`` if unknown."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(available_backends())}")
    module, cls = _REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def get_backend(config: BackendConfig) -> Backend:
    """Build the backend named by ``config.name``; unknown names raise ``ValueError``."""
    return backend_class(config.name)(config)


__all__ = [
    "Backend", "BackendConfig", "ConfigError", "Completion", "Feedback", "GenerationRequest", "PartialGeneration", "Task",
    "Unanswerable",
    "available_backends", "backend_class", "get_backend",
]
