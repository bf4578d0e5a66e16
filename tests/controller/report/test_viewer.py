"""The trace viewer: written by every run, rebuilt by scripts/view_traces.py, driven in a real
browser (Debian's chromium-headless-shell through playwright), and the SFT export of the same run."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from controller.report.viewer import read_data_file, read_page_data, viewer_data, write_viewer
from tracefactory import ANSWER, WRONG, make_record

REPO = Path(__file__).resolve().parents[3]
CLI = REPO / "scripts" / "run_live_tool_dagger.py"
VIEW = REPO / "scripts" / "view_traces.py"


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


def test_run_writes_a_self_contained_viewer(run):
    root, rep, records = run
    page = rep / "viewer" / "index.html"
    html = page.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing loaded from a network
    assert re.search(r'<script id="viewer-data" type="application/gzip;base64">[A-Za-z0-9+/=]+</script>', html)
    data = read_page_data(page)
    assert [c["id"] for c in data["cases"]] == [r["case_id"] for r in records]
    summary = json.loads((rep / "final_summary.json").read_text())
    assert {h["policy"] for h in data["run"]["heldout"]} == set(summary["policy_results"]) == set(data["policies"])
    assert data["run"]["figures"] == sorted(p.name for p in (rep / "figures").glob("*.png"))
    fixed = next(c for c in data["cases"] if len(c["chains"][0]) > 1)
    assert fixed["chains"][0][0]["fix_turns"] is None
    assert [m["role"] for m in fixed["chains"][0][1]["fix_turns"]] == ["assistant", "user"]
    assert "Fix the function" in fixed["chains"][0][1]["fix_turns"][-1]["content"]


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


STUDIES = ("foofah", "foofah_k3", "foofah_lora_smollm2", "library", "smollm2_coder", "smollm2_distilled")


def test_view_writes_the_run_page_from_its_data_byte_for_byte(run, tmp_path):
    """A run keeps its viewer's data (viewer/data.json.gz, the bytes the page inlines); ``view``
    writes the page from it and today's assets: the very page the run wrote. A stale page is
    refreshed, an up-to-date one left alone, an unreadable data file is a warning line."""
    root, rep, _ = run
    page = rep / "viewer" / "index.html"
    assert read_data_file(rep / "viewer" / "data.json.gz") == read_page_data(page)
    top = tmp_path / "runs"
    for name in ("kept", "stale", "broken"):  # each as a committed study: the data file, no page
        shutil.copytree(rep, top / name, ignore=shutil.ignore_patterns("sft", "cache", "adapters", "index.html"))
    (top / "stale" / "viewer" / "index.html").write_text("an old page")
    (top / "broken" / "viewer" / "data.json.gz").write_bytes(b"not gzip")
    r = script(CLI, "view", str(top))
    assert r.returncode == 0, r.stderr
    assert (top / "kept" / "viewer" / "index.html").read_bytes() == page.read_bytes()
    assert (top / "stale" / "viewer" / "index.html").read_bytes() == page.read_bytes()
    assert not (top / "broken" / "viewer" / "index.html").exists()
    [warning] = r.stderr.strip().splitlines()
    assert warning.startswith("warning: ") and str(top / "broken" / "viewer" / "data.json.gz") in warning
    index = (top / "runs.html").read_text()
    assert 'href="kept/viewer/index.html"' in index and 'href="stale/viewer/index.html"' in index
    kept = top / "kept" / "viewer" / "index.html"
    os.utime(kept, (1, 1))
    assert script(CLI, "view", str(top / "kept")).returncode == 0
    assert kept.stat().st_mtime == 1  # already up to date: not rewritten


def test_committed_studies_keep_only_their_viewer_data():
    """results/*/viewer/index.html is git-ignored: each study commits viewer/data.json.gz, a page's
    data for every record of the study, smaller than the page it replaces."""
    tracked = subprocess.run(["git", "ls-files", "results"], cwd=REPO, capture_output=True, text=True, check=True)
    viewer_files = sorted(p for p in tracked.stdout.splitlines() if "/viewer/" in p)
    assert viewer_files == [f"results/{s}/viewer/data.json.gz" for s in STUDIES]
    ignored = subprocess.run(["git", "check-ignore", *(f"results/{s}/viewer/index.html" for s in STUDIES)],
                             cwd=REPO, capture_output=True, text=True)
    assert ignored.returncode == 0 and len(ignored.stdout.splitlines()) == len(STUDIES)
    for s in STUDIES:
        data = read_data_file(REPO / "results" / s / "viewer" / "data.json.gz")
        summary = json.loads((REPO / "results" / s / "final_summary.json").read_text())
        assert len(data["cases"]) == data["run"]["n_records"] == summary["n_records"]
        assert set(data["policies"]) == set(summary["policy_results"])


def test_a_committed_study_page_written_by_view_opens(browser, tmp_path):
    """The page ``view`` writes from a committed study's data draws in a real browser."""
    study = tmp_path / "smollm2_coder"
    shutil.copytree(REPO / "results" / "smollm2_coder", study, ignore=shutil.ignore_patterns("index.html"))
    r = script(CLI, "view", str(study))
    assert r.returncode == 0, r.stderr
    errors = []
    page = open_page(browser, (study / "viewer" / "index.html").as_uri() + "#cases", errors)
    n = read_data_file(study / "viewer" / "data.json.gz")["run"]["n_records"]
    expect(page.locator("#f-count")).to_have_text(f"{n} of {n} cases")
    assert page.locator("#case-list tbody tr").count() == n and errors == []


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
    assert b["chains"][1][1]["fix_turns"] and "overfit program" in b["cats"]
    assert (a["outcome"], b["outcome"]) == ("program right", "program right")
    assert a["disagree"] and not b["disagree"] and b["pol"][1] is None


# ----------------------------------------------------------------------------- the browser


def open_page(browser, url, errors, width=1280):
    """A fresh page at ``url``, drawn (the data is unpacked asynchronously), its errors collected."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"failed: {r.url}"))
    page.goto(url)
    page.wait_for_selector("body[data-ready]", state="attached", timeout=20_000)
    return page


def test_viewer_in_a_real_browser(browser, run, tmp_path):
    import numpy as np
    from PIL import Image

    _, rep, records = run
    url = (rep / "viewer" / "index.html").as_uri()
    errors = []
    page = open_page(browser, url, errors)

    # overview: held-out table and figures that load
    summary = json.loads((rep / "final_summary.json").read_text())
    assert page.locator("#heldout tbody tr").count() == len(summary["policy_results"])
    assert page.eval_on_selector_all("#overview img", "imgs => imgs.map(i => i.naturalWidth)") and \
        all(w > 0 for w in page.eval_on_selector_all("#overview img", "imgs => imgs.map(i => i.naturalWidth)"))

    # run metadata from final_summary.json's config and run_config.json
    meta = page.eval_on_selector_all("#meta td[data-key]", "tds => Object.fromEntries(tds.map(t => [t.dataset.key, t.textContent]))")
    cfg, tcfg = summary["config"], json.loads((rep / "run_config.json").read_text())["trace_config"]
    assert float(meta["config.backend.temperature"]) == cfg["backend"]["temperature"]
    assert meta["config.backend.seed"] == str(cfg["backend"]["seed"]) and meta["config.split_seed"] == str(cfg["split_seed"])
    assert meta["config.rollout.max_repairs"] == "1" and meta["trace.n_cases"] == str(tcfg["n_cases"]) == str(len(records))

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
    expect(page.locator("#case-title")).to_have_text(rec["case_id"])  # drawn on the hashchange, later
    task_tables = page.locator("#case .panel").first.locator("table.grid")
    assert task_tables.count() == 3
    assert task_tables.nth(0).locator("tr").count() == len(rec["task"]["examples"][0]["input"])
    assert page.locator("#case pre.code").count() == sum(bool(x["code"]) for x in rec["rounds"])
    assert page.locator("#case pre.code .kw").count() > 0
    assert page.locator("#case .hindsight .hslabel").count() >= 2
    assert "Fix the function" in page.text_content("#case .fix-prompt")
    from tracegen.conversations import record_task
    from tracegen.prompts import direct_messages

    assert page.eval_on_selector_all("#direct .direct-prompt .msg pre", "ps => ps.map(p => p.textContent)") == \
        [m["content"] for m in direct_messages(record_task(rec))]
    assert page.locator("#attempts tbody tr").count() == 1 + len(rec["rounds"])
    assert page.locator("#policies tbody tr").count() == len(summary["policy_results"])
    page.screenshot(path=str(tmp_path / "case.png"), full_page=True)

    # a shared link opens the case in a fresh page
    other = records[-1]["case_id"]
    page2 = open_page(browser, url + "#case/" + quote(other, safe=""), errors)
    assert page2.text_content("#case-title") == other
    assert errors == []

    img = np.asarray(Image.open(tmp_path / "case.png").convert("L"), dtype=float)
    assert img.shape[0] > 900 and img.std() > 20  # not a blank page
    assert len(np.unique(img)) > 50
    if os.environ.get("VIEWER_SCREENSHOT_DIR"):  # to look at it
        shutil.copy(tmp_path / "case.png", Path(os.environ["VIEWER_SCREENSHOT_DIR"]) / "case.png")


# ----------------------------------------------------------------------------- each feature, known answers
# A hand-built run (tests/tracefactory.py) whose every figure is chosen, so each browser test below
# checks the page against a known answer: it fails when the feature it names breaks.

CONFIG = {"case_set": "crafted", "trace_file": "fresh_traces.jsonl", "split_seed": 7, "tag": None,
          "backend": {"name": "synth", "model": "m-1", "temperature": 0.7, "top_p": 0.95, "top_k": 40, "seed": 1234,
                      "max_new_tokens": 321, "enable_thinking": False},
          "rollout": {"max_repairs": 1, "program_samples": 1, "repair_history": False, "exec_timeout_s": 1.5},
          "experiment": {"seed": 3, "seeds": 2, "cv_folds": 0}}
EVIL = 'evil/<img src=x onerror="window.pwned=1">'


def _retotal(rec):
    parts = [rec["direct"], *rec["rounds"]]
    rec["totals"] = {k: sum(p[k] for p in parts) for k in ("prompt_tokens", "completion_tokens", "gen_ms")}
    rec["totals"]["sandbox_ms"] = sum(r["visible"]["wall_ms"] + r["test"]["wall_ms"] for r in rec["rounds"])
    return rec


def crafted_run():
    """Five records in an order no column sorts them in, and two policies' outcomes."""
    a = make_record("f/f_10", "f", "test", rounds=[(False, None), (True, ANSWER)], direct_tokens=40)
    a["task"]["output_table"] = [["a", "b", "c"], ["d", "e", "f"], ["g", "h", "i"]]
    a["rounds"][0]["visible"]["output"] = [["A", "B", "C", "x"], ["D", "E", "F", "y"], ["G", "H", "I", "z"]]
    a["rounds"][1]["visible"]["output"] = a["task"]["output_table"]
    for i, (p, c, g, v, t) in enumerate([(1000, 7, 12.5, 1.5, 2.0), (1111, 8, 13.5, 4.0, 1.5)]):
        a["rounds"][i].update(prompt_tokens=p, completion_tokens=c, gen_ms=g)
        a["rounds"][i]["visible"]["wall_ms"], a["rounds"][i]["test"]["wall_ms"] = v, t
    a["direct"]["logprobs"] = {"mean": -0.25, "min": -2.5, "sum": -10.0, "tokens": 40, "source": "hf"}
    a["rounds"][0]["logprobs"] = {"mean": -0.125, "min": -1.75, "sum": -0.875, "tokens": 7, "source": "hf"}
    a["rounds"][1]["logprobs"] = {"unavailable": "the server ignored logprobs", "source": "openai"}
    b = make_record("g/g_10", "g", "dev", rounds=[(True, ANSWER)], direct_tokens=5)
    b["rounds"][0]["code"] = "def transform(table):\n    zebra_marker = 1\n    return table"
    c = make_record("g/g_9", "g", "test", direct=[["Cy"], ["Dx"], ["Ey"]], rounds=[(False, None)], direct_tokens=900)
    c["rounds"][0]["visible"].update(error="exception", message="ValueError: quux overflow", output=None)
    d = make_record("h/h_3", "hyena", "train", rounds=[], answer=None, direct_tokens=60)
    e = make_record(EVIL, "<b>evil</b>", "train", rounds=[(True, WRONG)], direct_tokens=300)
    e["rounds"][0]["code"] = "def transform(table):\n    return '</script><script>window.pwned=2</script>'"
    records = [_retotal(r) for r in (a, b, c, d, e)]
    correct = {"p": [False, True, False, None, True], "q": [True, False, True, None, False]}  # per record above
    outcomes = {pol: [{"case_id": r["case_id"], "actions": ["WRITE", "PROGRAM"] if pol == "p" else ["DIRECT"],
                       "source": "program" if pol == "p" else "direct", "correct": ok}
                      for r, ok in zip(records, correct[pol])] for pol in correct}
    return records, outcomes


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    rep = tmp_path_factory.mktemp("crafted") / "reports"
    rep.mkdir()
    (rep / "run_config.json").write_text(json.dumps({"trace_config": {"n_cases": 5, "case_set": "deadbeef"}}))
    summary = {"config": CONFIG, "versions": {"python": "3.11.7", "git_commit": "abc123"}, "policy_results": {},
               "seeds": {"p": {"test": {"seeds": [0, 1], "exact": [2, 3], "n": 4, "mean": 2.5, "min": 2, "max": 3}}},
               "timing": {"total_s": 1.25}}
    records, outcomes = crafted_run()
    return write_viewer(rep, summary, records, outcomes).as_uri(), records, outcomes


def listed(page):
    return page.eval_on_selector_all("#case-list tbody tr", "trs => trs.map(t => t.dataset.id)")


def test_sortable_columns(browser, crafted):
    url, records, _ = crafted
    errors = []
    page = open_page(browser, url + "#cases", errors)
    ids = [r["case_id"] for r in records]
    assert listed(page) == ids  # unsorted: the trace file's order
    tokens = {r["case_id"]: r["totals"]["prompt_tokens"] + r["totals"]["completion_tokens"] for r in records}
    page.click("#case-list th[data-key=tokens]")
    assert listed(page) == sorted(ids, key=tokens.get) != ids
    assert page.get_attribute("#case-list th[data-key=tokens]", "aria-sort") == "ascending"
    page.click("#case-list th[data-key=tokens]")
    assert listed(page) == sorted(ids, key=tokens.get, reverse=True)
    assert page.get_attribute("#case-list th[data-key=tokens]", "aria-sort") == "descending"
    shown = page.eval_on_selector_all("#case-list tbody tr td:nth-child(8)", "tds => tds.map(t => t.textContent)")
    assert shown == [f"{tokens[i]:,}" for i in listed(page)]
    page.click("#case-list th[data-key=id]")  # case ids in natural order: g_9 before g_10
    order = listed(page)
    assert order.index("g/g_9") + 1 == order.index("g/g_10") and order.index("f/f_10") < order.index("g/g_9")
    page.click("#case-list th[data-key=attempts]")
    assert [len(next(r for r in records if r["case_id"] == i)["rounds"]) for i in listed(page)] == [0, 1, 1, 1, 2]
    # the case page's previous/next follow the sorted list
    page.click("#case-list tbody tr:first-child td:nth-child(2)")
    expect(page.locator("#case-title")).to_have_text(listed_after_sort(records)[0])
    page.click("text=next ›")  # the page is redrawn on the hashchange event, after the click returns
    expect(page.locator("#case-title")).to_have_text(listed_after_sort(records)[1])
    assert errors == []


def listed_after_sort(records):
    """Records by attempts, ties in file order (the sort is stable)."""
    return [r["case_id"] for r in sorted(records, key=lambda r: len(r["rounds"]))]


def test_search_over_ids_families_code_and_errors(browser, crafted):
    url, records, _ = crafted
    errors = []
    page = open_page(browser, url + "#cases", errors)
    for query, want in [("zebra_marker", ["g/g_10"]),  # only in a program's code
                        ("QUUX overflow", ["g/g_9"]),  # only in a sandbox error message (case-insensitive)
                        ("hyena", ["h/h_3"]),  # only in a family name
                        ("g/g", ["g/g_10", "g/g_9"]),  # case ids
                        ("zebra g/g_10", ["g/g_10"]), ("zebra g/g_9", []),  # every word must match
                        ("<img", [EVIL]), ("", [r["case_id"] for r in records])]:
        page.fill("#f-search", query)
        assert listed(page) == want, query
        assert page.text_content("#f-count") == f"{len(want)} of 5 cases"
    page.fill("#f-search", "zebra")
    assert "code, sample 0 round 0" in page.text_content("#case-list .hit")
    assert page.text_content("#case-list .hit mark") == "zebra"
    page.fill("#f-search", "quux")
    assert "error, sample 0 round 0" in page.text_content("#case-list .hit")
    assert page.evaluate("window.pwned") is None and errors == []


def test_filters_and_sort_live_in_the_url(browser, crafted):
    """A filtered, sorted list is a link: reloading it (or opening it in a fresh page) shows the
    same list, and the case page's way back returns to it."""
    url, records, outcomes = crafted
    errors = []
    page = open_page(browser, url + "#cases", errors)
    page.select_option("#f-policy", "wrong:0")
    page.fill("#f-search", "g/")
    page.click("#case-list th[data-key=tokens]")
    page.click("#case-list th[data-key=tokens]")
    want = listed(page)
    assert want == ["g/g_9"]  # p is wrong on f/f_10 and g/g_9; the search keeps the g family
    hash_ = page.evaluate("location.hash")
    assert hash_.startswith("#cases?") and "policy=wrong%3Ap" in hash_ and "sort=tokens" in hash_ and "dir=desc" in hash_
    fresh = open_page(browser, url + hash_, errors)
    assert listed(fresh) == want
    assert fresh.input_value("#f-search") == "g/" and fresh.input_value("#f-policy") == "wrong:0"
    assert fresh.get_attribute("#case-list th[data-key=tokens]", "aria-sort") == "descending"
    fresh.click("#case-list tbody tr:first-child td:nth-child(2)")
    expect(fresh.locator("#case-title")).to_have_text(want[0])
    fresh.click("text=← cases")
    expect(fresh.locator("#f-count")).to_have_text(f"{len(want)} of 5 cases")
    assert listed(fresh) == want and fresh.evaluate("location.hash") == hash_
    # a value the menus do not offer is dropped, not shown as an empty list
    odd = open_page(browser, url + "#cases?split=nosuch&policy=wrong:nosuch&sort=nosuch", errors)
    assert len(listed(odd)) == len(records)
    assert errors == []


def test_policy_wrong_filter(browser, crafted):
    url, records, outcomes = crafted
    errors = []
    page = open_page(browser, url + "#cases", errors)
    for i, pol in enumerate(["p", "q"]):  # the page lists policies in this order
        for kind, want in (("wrong", False), ("right", True)):
            page.select_option("#f-policy", f"{kind}:{i}")
            assert listed(page) == [o["case_id"] for o in outcomes[pol] if o["correct"] is want]
            assert page.text_content("#case-list th[data-key=policy]").startswith(f"{pol} actions")
    page.select_option("#f-policy", "wrong:0")
    assert listed(page) == ["f/f_10", "g/g_9"]
    page.select_option("#f-split", "test")  # filters combine
    assert listed(page) == ["f/f_10", "g/g_9"]
    page.select_option("#f-split", "dev")
    assert listed(page) == []
    page.select_option("#f-split", "")
    page.select_option("#f-policy", "")
    assert len(listed(page)) == 5 and page.locator("#case-list th[data-key=policy]").count() == 0
    assert errors == []


def test_diff_counter_counts_the_union_of_both_shapes(browser, crafted):
    url, _, _ = crafted
    errors = []
    page = open_page(browser, url + "#case/" + quote("f/f_10", safe=""), errors)
    # 3x4 against 3x3: 9 changed cells and 3 extra ones (the old counter said "12 of 9 cells differ")
    assert page.text_content("#attempt-0-0 .diffhead") == "12 cells differ (shapes: got 3x4, expected 3x3)"
    assert page.locator("#attempt-0-0 table.diff td").count() == 12
    assert page.text_content("#attempt-0-1 .diffhead") == "identical"
    assert page.text_content("#hindsight .diffhead") == "3 cells differ (shapes: got 3x2, expected 3x1)"
    page2 = open_page(browser, url + "#case/" + quote("g/g_9", safe=""), errors)
    assert page2.text_content("#hindsight .diffhead") == "2 of 3 cells differ"  # same shape: "N of M"
    assert errors == []


def test_direct_and_write_prompts_and_per_attempt_cost(browser, crafted):
    from tracegen.conversations import record_task
    from tracegen.prompts import direct_messages, write_messages

    url, records, _ = crafted
    rec = records[0]
    errors = []
    page = open_page(browser, url + "#case/" + quote(rec["case_id"], safe=""), errors)

    def msgs(sel):
        return page.eval_on_selector_all(sel + " .msg", "ms => ms.map(m => [m.classList[1], m.querySelector('pre').textContent])")
    task = record_task(rec)
    assert msgs("#direct .direct-prompt") == [[m["role"], m["content"]] for m in direct_messages(task)]
    assert msgs("#attempt-0-0 .write-prompt") == [[m["role"], m["content"]] for m in write_messages(task)]
    assert "[\"a\",\"b\",\"c\"]" in msgs("#attempt-0-0 .write-prompt")[1][1]  # the task as the model saw it
    fix = msgs("#attempt-0-1 .fix-prompt")
    assert [r for r, _ in fix] == ["assistant", "user"] and rec["rounds"][0]["code"] in fix[0][1]
    # per attempt: tokens in / out, generation latency, sandbox time (example + new input)
    rows = page.eval_on_selector_all("#attempts tbody tr", "trs => trs.map(t => [...t.cells].map(c => c.textContent))")
    parts = [rec["direct"], *rec["rounds"]]
    assert [r[2:5] for r in rows] == [[f"{p['prompt_tokens']:,}", f"{p['completion_tokens']:,}", f"{p['gen_ms']:,.1f}"] for p in parts]
    assert [r[5] for r in rows] == ["", "3.5", "5.5"]
    t = rec["totals"]
    foot = page.eval_on_selector("#attempts tfoot tr", "t => [...t.cells].map(c => c.textContent)")
    assert foot[2:5] == [f"{t['prompt_tokens'] + t['completion_tokens']:,} tokens", f"{t['gen_ms']:,.1f}", f"{t['sandbox_ms']:,.1f}"]
    assert page.text_content("#attempt-0-0 .cost") == \
        "tokens 1,000 in / 7 out · generation 12.5 ms · sandbox 1.5 ms example + 2.0 ms new input"
    # each attempt's confidence where the trace recorded it; what the server said where it gave none
    assert "confidence mean log-prob -0.250 · min -2.500 · 40 tokens" in page.text_content("#direct .badges")
    assert "confidence mean log-prob -0.125 · min -1.750 · 7 tokens" in page.text_content("#attempt-0-0 .badges")
    assert "confidence unavailable: the server ignored logprobs" in page.text_content("#attempt-0-1 .badges")
    b_page = open_page(browser, url + "#case/" + quote(records[1]["case_id"], safe=""), errors)
    assert "confidence" not in b_page.text_content("#direct .badges")  # synth: none recorded, none shown
    assert page.evaluate("window.scrollY") == 0
    page.click("#attempts a[data-goto=attempt-0-1]")  # scrolls to the attempt; the URL still names the case
    assert page.evaluate("location.hash") == "#case/" + quote(rec["case_id"], safe="")
    assert page.evaluate("window.scrollY") > 0
    assert 0 <= page.evaluate("document.getElementById('attempt-0-1').getBoundingClientRect().top") < 900
    assert errors == []


def test_run_metadata(browser, crafted):
    url, _, _ = crafted
    errors = []
    page = open_page(browser, url, errors)

    shown = page.eval_on_selector_all("#meta td[data-key]", "tds => Object.fromEntries(tds.map(t => [t.dataset.key, t.textContent]))")
    meta = shown.get
    assert [meta(k) for k in ("config.backend.temperature", "config.backend.top_p", "config.backend.top_k",
                              "config.backend.max_new_tokens", "config.backend.model")] == ["0.7", "0.95", "40", "321", "m-1"]
    assert [meta(k) for k in ("config.backend.seed", "config.split_seed", "config.experiment.seed",
                              "config.experiment.seeds")] == ["1234", "7", "3", "2"]
    assert [meta(k) for k in ("trace.n_cases", "trace.case_set", "versions.git_commit", "timing.total_s",
                              "config.rollout.max_repairs")] == ["5", "deadbeef", "abc123", "1.25", "1"]
    assert "config.experiment.lora.seed" not in shown  # absent from the config: no row
    assert json.loads(page.text_content("#config-json"))["config"] == CONFIG
    assert page.eval_on_selector_all("#seeds tbody tr", "trs => trs.map(t => t.cells[3].textContent)") == ["2, 3 of 4"]
    assert errors == []


def test_prompts_shown_are_the_prompts_the_rollout_sent(browser, tmp_path):
    """Trace one case through the real rollout with a backend that records its requests; the
    page must show exactly those messages (traces do not store prompts: the page rebuilds them)."""
    from replay_recording import CASE, _backend
    from sandbox import Sandbox
    from tracegen.rollout import RolloutConfig, trace_cases

    backend, seen = _backend(tmp_path)
    with Sandbox(workers=1) as sb:
        [rec] = trace_cases([CASE], {}, backend, sb, RolloutConfig(max_repairs=2, progress=False, repair_history=True))
    summary = {"config": {"rollout": {"repair_history": True}}, "policy_results": {}}
    url = write_viewer(tmp_path / "reports", summary, [rec], {}).as_uri()
    errors = []
    page = open_page(browser, url + "#case/" + quote(CASE.case_id, safe=""), errors)

    def msgs(sel):
        return page.eval_on_selector_all(sel + " .msg", "ms => ms.map(m => ({role: m.classList[1], content: m.querySelector('pre').textContent}))")
    sent = {(r.kind, r.round): r.messages for r in seen}
    assert msgs("#direct .direct-prompt") == sent[("direct", 0)] or msgs("#direct .direct-prompt") == next(
        r.messages for r in seen if r.kind == "direct")
    write = msgs("#attempt-0-0 .write-prompt")
    assert write == next(r.messages for r in seen if r.kind == "write")
    fixes = [r.messages for r in seen if r.kind == "fix"]
    assert len(fixes) == 2 and len(fixes[1]) == 6  # the second repair shows the whole history
    for i, sent_fix in enumerate(fixes, start=1):
        assert write + msgs(f"#attempt-0-{i} .fix-prompt") == sent_fix
    # the raw answers as the model wrote them (the page stores them without the code they quote)
    assert [page.text_content(f"#attempt-0-{i} .raw pre") for i in range(3)] == [r["raw"] for r in rec["rounds"]]
    stored = read_page_data(tmp_path / "reports" / "viewer" / "index.html")["cases"][0]["chains"][0]
    assert all(r["raw_ref"] and r["code"] not in r["raw"] for r in stored)
    assert errors == []


def test_hostile_text_is_shown_not_run(browser, crafted):
    """A case id, family and code full of markup are drawn as text on the list and the case page."""
    url, _, _ = crafted
    errors = []
    page = open_page(browser, url + "#cases", errors)
    assert page.locator(f'#case-list tbody tr[data-id="{EVIL.replace(chr(34), chr(92) + chr(34))}"]').count() == 1
    page.click(f"#case-list a[href='#case/{quote(EVIL, safe='')}']")
    expect(page.locator("#case-title")).to_have_text(EVIL)
    assert "<b>evil</b>" in page.text_content("#case")
    assert "</script><script>window.pwned=2</script>" in page.text_content("#attempt-0-0 pre.code")
    assert page.locator("#case img, #cases img").count() == 0
    assert page.evaluate("window.pwned") is None and errors == []


def test_view_traces_reads_a_gzipped_trace_file(run, tmp_path):
    """A committed study may keep fresh_traces.jsonl.gz (results/foofah_k3): same page data."""
    import gzip

    _, rep, _ = run
    root = tmp_path / "gz"
    shutil.copytree(rep, root / "reports", ignore=shutil.ignore_patterns("viewer", "sft"))
    trace = root / "reports" / "fresh_traces.jsonl"
    (root / "reports" / "fresh_traces.jsonl.gz").write_bytes(gzip.compress(trace.read_bytes()))
    trace.unlink()
    r = script(VIEW, str(root))
    assert r.returncode == 0, r.stderr
    assert read_page_data(root / "reports" / "viewer" / "index.html") == read_page_data(rep / "viewer" / "index.html")
    (root / "reports" / "fresh_traces.jsonl.gz").write_bytes(b"not gzip")
    r = script(VIEW, str(root))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "fresh_traces.jsonl.gz" in r.stderr
