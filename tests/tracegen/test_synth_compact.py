"""Compact programs (``--synth-compact``) compute exactly what the readable ones compute: the same
sandbox results on the library's cases, the same helpers, and no docstrings or comments."""
from __future__ import annotations

import ast
import io
import tokenize

from cases import load_cases, resolve_case_set
from sandbox import Sandbox
from tracegen.synth import emit_code, read_history, run_program, synthesize
from tracegen.synth.codegen import strip_history

from tests.tracegen.test_synth_codegen import OTHER_INPUTS, TABLES, _exec, _random_programs


def _library_programs():
    """One case per family of the shipped library and the program the write budget finds for it."""
    seen, out = set(), []
    for case in load_cases(resolve_case_set("library")[1]):
        if case.family in seen:
            continue
        seen.add(case.family)
        result = synthesize([(case.input_table, case.output_table)], max_nodes=100)
        if result.found:
            out.append((case, result.program))
    return out


def test_compact_code_passes_the_same_library_cases_in_the_sandbox():
    found = _library_programs()
    assert len(found) >= 30  # the write budget solves most families
    jobs = []
    for case, program in found:
        for compact in (False, True):
            code = emit_code(program, compact=compact)
            jobs += [(code, case.input_table), (code, case.test_table)]
    with Sandbox(workers=2) as sb:
        results = sb.run_many(jobs, timeout_s=5.0, memory_mb=256)
    passed = right = 0
    for i, (case, _) in enumerate(found):
        full_ex, full_new, comp_ex, comp_new = results[4 * i:4 * i + 4]
        assert (comp_ex.ok, comp_ex.output) == (full_ex.ok, full_ex.output), case.case_id
        assert (comp_new.ok, comp_new.output) == (full_new.ok, full_new.output), case.case_id
        passed += comp_ex.ok and comp_ex.output == case.output_table
        right += comp_new.ok and comp_new.output == case.test_answer
    assert passed == len(found) and right >= 0.8 * len(found)


def test_compact_code_matches_the_operators_and_keeps_only_code():
    for k, program in _random_programs(120):
        full, compact = emit_code(program), emit_code(program, compact=True)
        transform = _exec(compact)
        for table in [TABLES[k]] + TABLES + OTHER_INPUTS:
            assert transform([list(r) for r in table]) == run_program(table, program), program
        # the same functions (no unused helper comes in, none is left out) ...
        defs = lambda code: sorted(n.name for n in ast.walk(ast.parse(code)) if isinstance(n, ast.FunctionDef))
        assert defs(full) == defs(compact)
        # ... without docstrings, comments (other than the history lines a repair reads) or blank lines
        body = strip_history(compact)
        comments = [t for t in tokenize.generate_tokens(io.StringIO(body).readline) if t.type == tokenize.COMMENT]
        assert not comments and '"""' not in body and "\n\n" not in body
        assert read_history(compact)[0] == read_history(full)[0]
        assert len(compact) < len(full)
