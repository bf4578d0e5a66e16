"""Parsing on a corpus of realistic model outputs (tests/data/model_outputs) plus edge cases."""
import json
from pathlib import Path

import pytest

from tracegen.parsing import Parsed, parse_code, parse_table

CORPUS = Path(__file__).parents[1] / "data" / "model_outputs"
EXPECTED = json.loads((CORPUS / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus(name):
    want = EXPECTED[name]
    text = (CORPUS / name).read_text()
    got = parse_table(text) if want["kind"] == "table" else parse_code(text)
    assert isinstance(got, Parsed)
    assert got.status == want["status"], got
    if got.status == "failed":
        assert got.value is None
    if "value" in want:
        assert got.value == want["value"]
    if "contains" in want:
        assert want["contains"] in got.value
    if "detail_contains" in want:
        assert want["detail_contains"] in got.detail


def test_corpus_covers_every_file():
    assert sorted(p.name for p in CORPUS.glob("*.txt")) == sorted(EXPECTED)


def test_code_drops_prose_and_drafts():
    bare = parse_code((CORPUS / "code_bare.txt").read_text()).value
    assert bare.startswith("import re") and "collapses" not in bare and "Sure" not in bare
    compile(bare, "x", "exec")
    think = parse_code((CORPUS / "code_think.txt").read_text()).value
    assert think.strip().endswith("return table[1:]")
    two = parse_code((CORPUS / "code_two_fences.txt").read_text()).value
    assert "def transform" in two and "def swap" in two


def test_numbers_keep_the_digits_written():
    assert parse_table('[[1.50, 2e3, -0.0]]').value == [["1.50", "2e3", "-0.0"]]


def test_strict_json_is_ok_and_alterations_are_named():
    assert parse_table('[["a"]]') == Parsed([["a"]], "ok", "prose")
    p = parse_table("[['a', 1,],]")
    assert p.status == "repaired" and p.value == [["a", "1"]]
    for note in ("single quotes", "numbers as strings", "trailing comma"):
        assert note in p.detail


def test_garbage_fails_with_reason():
    for text in ["", "[[a, b]]", '[["a"], {"b": 1}]', '[[["nested"]]]']:
        p = parse_table(text)
        assert p.status == "failed" and p.value is None and p.detail


def test_cut_inside_first_row_fails():
    p = parse_table('```json\n[["a", "b')
    assert p.status == "failed" and "cut off" in p.detail


def test_table_after_answer_keyword_with_inline_fence():
    assert parse_table('```json [["x","y"]]```').value == [["x", "y"]]


def test_bare_code_without_prose_is_ok():
    p = parse_code("def transform(table):\n    return table\n")
    assert p.status == "ok" and p.value.startswith("def transform")
