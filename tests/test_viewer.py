"""The trace viewer: written by every run, rebuilt by scripts/view_traces.py, driven in a real
browser (Debian's chromium-headless-shell through playwright), and the SFT export of the same run."""
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from urllib.parse import quote

import pytest

from controller.viewer import viewer_data
from tracefactory import ANSWER, WRONG, make_record

REPO = Path(__file__).resolve().parent.parent
CLI = REPO / "scripts" / "run_live_tool_dagger.py"
VIEW = REPO / "scripts" / "view_traces.py"
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def find_browser() -> str | None:
    """VIEWER_BROWSER, else a system Chromium on PATH (never a downloaded one)."""
    if os.environ.get("VIEWER_BROWSER"):
        return os.environ["VIEWER_BROWSER"]
    for name in BROWSERS:
        if shutil.which(name):
            return shutil.which(name)
    return None


def script(path, *args):
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("viewer-run")
    r = script(CLI, "--root", str(root), "--cases", "library", "--limit-total", "6", "--max-repairs", "1",
               "--generate-traces", "--export-sft", "--sft-max-tokens", "0", "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    rep = root / "reports"
    records = [json.loads(l) for l in (rep / "fresh_traces.jsonl").read_text().splitlines()]
    return root, rep, records


def embedded(page: Path) -> dict:
    m = re.search(r"window\.VIEWER_DATA = (\{.*?\});</script>", page.read_text(), re.S)
    return json.loads(m.group(1))


def test_run_writes_a_self_contained_viewer(run):
    root, rep, records = run
    page = rep / "viewer" / "index.html"
    html = page.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing loaded from a network
    assert "</script>" not in html.split("window.VIEWER_DATA = ", 1)[1].split(";</script>", 1)[0]
    data = embedded(page)
    assert [c["id"] for c in data["cases"]] == [r["case_id"] for r in records]
    summary = json.loads((rep / "final_summary.json").read_text())
    assert {h["policy"] for h in data["run"]["heldout"]} == set(summary["policy_results"]) == set(data["policies"])
    assert data["run"]["figures"] == sorted(p.name for p in (rep / "figures").glob("*.png"))
    fixed = next(c for c in data["cases"] if len(c["chains"][0]) > 1)
    assert fixed["chains"][0][0]["feedback_in"] is None
    assert "Fix the function" in fixed["chains"][0][1]["feedback_in"]


def test_view_traces_rebuilds_the_same_page_and_refuses_bad_input(run, tmp_path):
    root, rep, _ = run
    page = rep / "viewer" / "index.html"
    before = page.read_bytes()
    page.unlink()
    r = script(VIEW, str(root))
    assert r.returncode == 0 and r.stdout.strip() == str(page)
    assert page.read_bytes() == before  # from the files == from the run in memory
    bad = tmp_path / "bad"
    shutil.copytree(rep, bad / "reports", ignore=shutil.ignore_patterns("viewer"))
    (bad / "reports" / "fresh_traces.jsonl").write_text("{not json\n{}\n")
    for target in (tmp_path / "missing", bad):
        r = script(VIEW, str(target))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (bad / "reports" / "viewer").exists()


def test_sft_export_of_a_run_has_no_test_case_or_family(run):
    _, rep, records = run
    split_of = {r["case_id"]: r["split"] for r in records}
    test_fams = {r["family"] for r in records if r["split"] == "test"}
    assert test_fams
    rows = {s: [json.loads(l) for l in (rep / "sft" / f"{s}.jsonl").read_text().splitlines()] for s in ("train", "dev")}
    assert rows["train"] and rows["dev"]
    for s, rs in rows.items():
        for r in rs:
            assert r["split"] == s == split_of[r["case_id"]] and r["family"] not in test_fams
            assert [m["role"] for m in r["completion"]] == ["assistant"]  # prompt-completion rows


def test_viewer_reads_both_sample_layouts():
    v1 = make_record("a/a_1", "a", "train", rounds=[(False, None)])
    v1["samples"] = make_record(rounds=[(True, ANSWER)])["rounds"]  # flat list of WRITE rounds
    v1["hidden"]["samples"] = [{"hidden_exact": True}]
    v2 = make_record("b/b_1", "b", "dev", rounds=[(True, WRONG)])
    v2["samples"] = [make_record(rounds=[(False, None), (True, ANSWER)])["rounds"], []]
    v2["hidden"]["samples"] = [[{"hidden_exact": None}, {"hidden_exact": True}], []]
    outcomes = {"p": [{"case_id": "a/a_1", "actions": ["WRITE", "PROGRAM"], "source": "program", "correct": False},
                      {"case_id": "b/b_1", "actions": ["DIRECT"], "source": "direct", "correct": False}],
                "q": [{"case_id": "a/a_1", "actions": ["DIRECT"], "source": "direct", "correct": True}]}
    a, b = viewer_data({}, [v1, v2], outcomes, [])["cases"]
    assert [len(ch) for ch in a["chains"]] == [1, 1] and [len(ch) for ch in b["chains"]] == [1, 2, 0]
    assert a["chains"][1][0]["hidden_exact"] is True and b["chains"][1][1]["hidden_exact"] is True
    assert b["chains"][1][1]["feedback_in"] and "overfit program" in b["cats"]
    assert (a["outcome"], b["outcome"]) == ("program right", "program right")
    assert a["disagree"] and not b["disagree"] and b["pol"][1] is None


# ----------------------------------------------------------------------------- the browser


@pytest.fixture(scope="module")
def browser():
    exe = find_browser()
    if exe is None:
        reason = ("no system Chromium found (install Debian's chromium-headless-shell or set VIEWER_BROWSER): "
                  "the viewer was NOT tested in a browser")
        warnings.warn(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe)
        yield b
        b.close()


def test_viewer_in_a_real_browser(browser, run, tmp_path):
    import numpy as np
    from PIL import Image

    _, rep, records = run
    url = (rep / "viewer" / "index.html").as_uri()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"failed: {r.url}"))
    page.goto(url)

    # overview: held-out table and figures that load
    summary = json.loads((rep / "final_summary.json").read_text())
    assert page.locator("#heldout tbody tr").count() == len(summary["policy_results"])
    assert page.eval_on_selector_all("#overview img", "imgs => imgs.map(i => i.naturalWidth)") and \
        all(w > 0 for w in page.eval_on_selector_all("#overview img", "imgs => imgs.map(i => i.naturalWidth)"))

    # the case list and its filters
    page.click("#nav-cases")
    rows = page.locator("#case-list tbody tr")
    assert rows.count() == len(records)
    page.select_option("#f-split", "test")
    assert rows.count() == sum(r["split"] == "test" for r in records)
    page.select_option("#f-split", "")
    page.fill("#f-search", "clean_export")
    assert rows.count() == 1
    page.fill("#f-search", "")
    page.select_option("#f-cat", "round: wrong_output")
    assert rows.count() == sum(any(not x["visible_pass"] and x["visible"]["error"] == "wrong_output"
                                   for x in r["rounds"]) for r in records)

    # open a case by clicking: the URL names it; its tables, code and repair feedback are there
    rec = next(r for r in records if r["case_id"].startswith("clean_export"))
    page.click(f"#case-list tbody tr[data-id='{rec['case_id']}'] td:nth-child(2)")
    assert page.evaluate("location.hash") == "#case/" + quote(rec["case_id"], safe="")
    assert page.text_content("#case-title") == rec["case_id"]
    task_tables = page.locator("#case .panel").first.locator("table.grid")
    assert task_tables.count() == 3
    assert task_tables.nth(0).locator("tr").count() == len(rec["task"]["input_table"])
    assert page.locator("#case pre.code").count() == sum(bool(x["code"]) for x in rec["rounds"])
    assert page.locator("#case pre.code .kw").count() > 0
    assert page.locator("#case .hindsight .hslabel").count() >= 2
    assert "Fix the function" in page.text_content("#case")
    assert page.locator("#policies tbody tr").count() == len(summary["policy_results"])
    page.screenshot(path=str(tmp_path / "case.png"), full_page=True)

    # a shared link opens the case in a fresh page
    other = records[-1]["case_id"]
    page2 = browser.new_page()
    page2.on("pageerror", lambda e: errors.append(str(e)))
    page2.goto(url + "#case/" + quote(other, safe=""))
    assert page2.text_content("#case-title") == other
    assert errors == []

    img = np.asarray(Image.open(tmp_path / "case.png").convert("L"), dtype=float)
    assert img.shape[0] > 900 and img.std() > 20  # not a blank page
    assert len(np.unique(img)) > 50
    if os.environ.get("VIEWER_SCREENSHOT_DIR"):  # to look at it
        shutil.copy(tmp_path / "case.png", Path(os.environ["VIEWER_SCREENSHOT_DIR"]) / "case.png")
