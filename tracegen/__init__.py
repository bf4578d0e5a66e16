"""How a model attempts cases: prompts, output parsing, model backends, the rollout loop, traces.

Public entry points: ``tracegen.records`` (trace files), ``tracegen.rollout`` (``RolloutConfig``,
``rollout``, ``trace_cases``), ``tracegen.backends`` (``get_backend``). The package root imports only
the light trace-file helpers so that reading traces needs nothing else.
"""
from .records import SCHEMA_VERSION, TraceFileError, append_record, read_traces, validate_record

__all__ = ["SCHEMA_VERSION", "TraceFileError", "append_record", "read_traces", "validate_record"]
