"""Real-size tables: the generator of by-example cases (500-2,000 rows) and the synthesizer's
search on a head sample of a big example, checked on the full tables before it counts."""
import pytest

from cases.generators.large import MAX_ROWS, MIN_ROWS, large_case, large_cases, main, write_cases
from tracegen.synth import run_program, search, synthesize


def test_generator_is_seeded_and_real_size():
    a, b = large_cases(6, seed=3), large_cases(6, seed=3)
    assert a == b
    assert large_cases(2, seed=4) != a[:2]
    for case in a:
        for key in ("InputTable", "TestingTable"):
            rows = case[key]
            assert MIN_ROWS - 10 <= len(rows) <= MAX_ROWS + 10, (case["TestName"], key, len(rows))
            assert all(isinstance(c, str) for r in rows for c in r)
        # the example and the new input are different draws of the same chores
        assert case["InputTable"] != case["TestingTable"]
        assert case["OutputTable"][0] == case["TestAnswer"][0]  # same clean header
        assert case["TestName"].startswith("large_")


def test_written_cases_load_as_a_case_folder(tmp_path):
    from cases import load_cases

    write_cases(tmp_path, n=3, seed=1)
    cases = load_cases(tmp_path)
    assert [c.case_id for c in cases] == ["large_000", "large_001", "large_002"]
    assert all(c.test_answer and len(c.input_table) >= MIN_ROWS - 10 for c in cases)


def test_cli_rejects_a_bad_count(tmp_path, capsys):
    assert main([str(tmp_path / "x"), "--n", "0"]) == 2
    assert "--n" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def _report_case():
    """A title, blank separator rows and a footer around 700 data rows."""
    for k in range(200):
        case = large_case(11, k)
        if case["TestName"] in ("large_blanks_title_total", "large_title_total"):
            return case
    pytest.skip("no such case drawn")


def test_big_example_is_solved_on_its_head_and_checked_on_the_whole():
    case = _report_case()
    inp, out = case["InputTable"], case["OutputTable"]
    found = search([(inp, out)], max_nodes=4000)
    assert found.sampled and found.solutions
    program = found.solutions[0][3]
    assert run_program(inp, program) == out  # checked on the full example, not only the head
    assert run_program(case["TestingTable"], program) == case["TestAnswer"]


def test_a_head_fit_that_fails_the_whole_is_not_a_solution():
    # the head shows nothing to delete; the footer (far below the head) must go too
    rows = [[f"n{i}", str(i)] for i in range(400)]
    inp = rows + [["Total", "79800"]]
    found = search([(inp, rows)], max_nodes=20_000)
    assert found.sampled
    assert found.partial  # the empty program fits the head ...
    res = synthesize([(inp, rows)], max_nodes=20_000)
    assert res.found and run_program(inp, res.program) == rows  # ... and the full search finishes it
    assert res.program != []


def test_sampling_off_gives_the_plain_search():
    rows = [[f"a{i}", f"b{i}"] for i in range(250)]
    target = [[r[1], r[0]] for r in rows]
    plain = search([(rows, target)], max_nodes=3000, sample=False)
    assert not plain.sampled and plain.solutions
    sampled = search([(rows, target)], max_nodes=3000)
    assert sampled.sampled and sampled.solutions[0][2] == plain.solutions[0][2]


def test_small_examples_are_never_sampled():
    found = search([([["a", "1"], ["b", "2"]], [["1", "a"], ["2", "b"]])], max_nodes=500)
    assert not found.sampled and found.solutions
