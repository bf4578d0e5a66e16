"""docs/results.md's figures are the committed summaries', rendered: every block equals its rendering,
the prose around the blocks holds no figure, and the tables' numbers are the summaries' own."""
import copy
import re
from pathlib import Path

import pytest

from controller.report.results_doc import BLOCKS, DOC, STUDIES, load, markers, prose, render

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def summaries():
    return load(ROOT)


def test_every_block_of_docs_results_is_its_summaries_rendering(summaries):
    doc = (ROOT / DOC).read_text()
    for name in BLOCKS:
        start, end = markers(name)
        assert doc.count(start) == 1 and doc.count(end) == 1, f"{DOC} lacks the {name} block"
    assert render(doc, summaries) == doc, (
        f"{DOC} differs from the committed summaries: run python -m controller.report.readme")


def test_the_prose_around_the_blocks_holds_no_figure():
    """A figure typed into the prose is how the doc came to contradict its summaries (161/358 where the
    summary said 161/327): every number lives in a rendered block."""
    found = [line.strip() for line in prose((ROOT / DOC).read_text()).splitlines() if re.search(r"\d", line)]
    assert not found, f"figures outside the rendered blocks of {DOC}: {found}"


def test_the_best_fixed_table_is_each_studys_pooled_result(summaries):
    block = BLOCKS["best_fixed"](summaries)
    for where, label in STUDIES:
        pooled = summaries[where]["cv"]["pooled"]
        row = next(line for line in block.splitlines() if line.startswith(f"| {label} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        want = [f"{pooled[p]['exact']} / {pooled[p]['program_generations']}"
                for p in ("best_fixed", "repair_at_most_1", "always_tool_visible")]
        assert cells[2:] == want


def test_a_changed_summary_changes_the_doc(summaries):
    """The check can fail: the same doc against a summary whose best_fixed moved is stale."""
    doc = (ROOT / DOC).read_text()
    moved = copy.deepcopy(summaries)
    moved[STUDIES[0][0]]["cv"]["pooled"]["best_fixed"]["program_generations"] += 31
    assert render(doc, moved) != doc


def test_a_doc_without_a_block_is_refused(summaries):
    start, end = markers("primaries")
    doc = (ROOT / DOC).read_text()
    cut = doc[:doc.index(start)] + doc[doc.index(end) + len(end):]
    with pytest.raises(ValueError, match="primaries"):
        render(cut, summaries)


def test_every_block_renders_from_summaries_missing_keys():
    """A re-run study whose summary lacks a key renders "n/a", never a traceback."""
    bare = {where: {} for where, _ in STUDIES}
    for fn in BLOCKS.values():
        assert isinstance(fn({}), str) and isinstance(fn(bare), str)
