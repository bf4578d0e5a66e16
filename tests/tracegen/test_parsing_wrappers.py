"""Direct answers as small chat models write them (the shapes SmolLM2-135M-Instruct and the pilot's
fine-tuned copy produced on Foofah: prose around a fence, a JSON object with the table under a key,
a table followed by an explanation): each is read, the wrapper is named, and an answer holding two
different tables is refused, never guessed."""
from tracegen.parsing import parse_table

T = [["Alice", "30"], ["Bob", "25"]]


def test_json_object_with_the_table_under_a_key():
    p = parse_table('{"output": [["Alice", "30"], ["Bob", "25"]]}')
    assert p.value == T and p.wrapper == "json_key"
    fenced = ('Here is the output table for the new input:\n\n```json\n{\n  "output_table": [\n'
              '    ["Alice", "30"],\n    ["Bob", "25"]\n  ]\n}\n```\n')
    p = parse_table(fenced)
    assert p.value == T and p.wrapper == "code_fence+json_key" and p.status == "ok"


def test_code_fence_with_prose_around_it():
    text = ("To transform the input table, we take each row and keep the name and the age.\n\n"
            '```json\n[["Alice", "30"], ["Bob", "25"]]\n```\n\nThis table has the same columns as the example output.')
    p = parse_table(text)
    assert p.value == T and p.wrapper == "code_fence"


def test_trailing_explanation():
    text = '[["Alice", "30"], ["Bob", "25"]]\n\nExplanation: the first column is the name and the second the age.'
    p = parse_table(text)
    assert p.value == T and p.wrapper == "trailing_text"
    assert parse_table('[["Alice", "30"], ["Bob", "25"]]').wrapper == "none"
    assert parse_table('The output is [["Alice", "30"], ["Bob", "25"]].').wrapper == "prose"


def test_two_different_tables_are_refused():
    text = ('The output table is:\n```json\n[["Alice", "30"]]\n```\nThe output table is:\n'
            '```json\n[["Bob", "25"]]\n```\n')
    p = parse_table(text)
    assert p.value is None and p.status == "failed" and "ambiguous" in p.detail
    p = parse_table('{"output": [["Alice", "30"]], "table": [["Bob", "25"]]}')
    assert p.value is None and "ambiguous" in p.detail
    same = 'Answer:\n```json\n[["Alice", "30"]]\n```\nSo the final answer is:\n```json\n[["Alice", "30"]]\n```'
    assert parse_table(same).value == [["Alice", "30"]]  # the same table twice is not ambiguous


def test_the_wrapper_is_in_the_trace_record_and_valid():
    from tracegen.records import validate_record
    from tracefactory import make_record

    rec = make_record()
    p = parse_table('{"output": [["Cy"], ["Di"], ["Ed"]]}')
    rec["schema_version"] = 3
    rec["direct"]["parse"] = {"status": p.status, "detail": p.detail, "wrapper": p.wrapper}
    validate_record(rec)
