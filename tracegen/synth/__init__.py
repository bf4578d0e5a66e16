"""A programming-by-example synthesizer for table transformations (the ``synth`` backend's model).

``synthesize`` searches the operator library for a program consistent with the example and
``emit_code`` writes it as self-contained Python; ``guess_direct`` is the cheap, independent guesser
that answers without a program.
"""
from .codegen import describe_step, emit_code, read_history
from .direct import guess_direct
from .program import parse_key, program_key, run_program
from .search import Outcome, SynthResult, choose, search, stages, synthesize

__all__ = [
    "Outcome", "SynthResult", "choose", "describe_step", "emit_code", "guess_direct", "parse_key",
    "program_key", "read_history", "run_program", "search", "stages", "synthesize",
]
