"""``live-tool-dagger compare`` and ``live-tool-dagger view`` on small real runs made by the CLI.

Three runs of the synthesizer: A and B trace the same 16 cases with ``--max-repairs 1`` and
``--max-repairs 0`` (so the policies that repair lose cases in B), C traces 8 of them (another case
set). Every case id holds markup and quotes, so each page must escape it and each link encode it.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

import pytest

from e2e_helpers import CLI, small_case_dir

MARKUP = ' <b>&"x\''  # appended to every family folder, so every case id holds it


def cli(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, str(CLI), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=900)


def one_error_line(r) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    top = tmp_path_factory.mktemp("compare")
    cases = small_case_dir(top / "cases", families=8, per_family=2)
    for fam in sorted(cases.iterdir()):
        fam.rename(fam.with_name(fam.name + MARKUP))
    common = ("--cases", cases, "--generate-traces", "--no-progress", "--test-families", "3")
    for name, extra in (("a", ("--max-repairs", "1")), ("b", ("--max-repairs", "0")),
                        ("c", ("--max-repairs", "1", "--limit-total", "8"))):
        r = cli("--root", top / name, *common, *extra)
        assert r.returncode == 0, r.stderr[-3000:]
    return top


@pytest.fixture(scope="module")
def compared(runs):
    r = cli("compare", runs / "a", runs / "b")
    assert r.returncode == 0, r.stderr[-3000:]
    out = runs / "a" / "reports" / "compare_b"  # the default --out
    return r, out, json.loads((out / "compare.json").read_text())


def predictions(root: Path, policy: str, split="test") -> dict:
    rows = [json.loads(l) for l in (root / "reports" / "predictions" / f"{policy}.jsonl").read_text().splitlines()]
    return {r["case_id"]: r for r in rows if r["split"] == split}


@pytest.mark.slow
def test_compare_numbers_are_the_runs_numbers(runs, compared):
    r, out, res = compared
    sa, sb = (json.loads((runs / x / "reports" / "final_summary.json").read_text()) for x in "ab")
    shared = set(sa["policy_results"]) & set(sb["policy_results"])
    assert set(res["policies"]) == shared and res["split"] == "test"
    assert res["a"]["root"] == str(runs / "a") and res["b"]["root"] == str(runs / "b")
    assert {"key": "rollout.max_repairs", "a": 1, "b": 0} in res["settings_differ"]
    n_differing = 0
    for p, e in res["policies"].items():
        pa, pb = predictions(runs / "a", p), predictions(runs / "b", p)
        for side, summary, preds in (("a", sa, pa), ("b", sb, pb)):
            want = summary["policy_results"][p]["test"]
            got = e[side]
            assert (got["exact"], got["n"]) == (want["exact"], want["n"]) == (
                sum(x["correct"] is True for x in preds.values()), sum(x["correct"] is not None for x in preds.values()))
            assert got["program_generations"] == want["program_generations"] == sum(
                x["program_generations"] for x in preds.values())
            assert got["repair_actions"] == want["repair_actions"] == sum(x["repair_actions"] for x in preds.values())
        d = e["diff"]
        n = e["a"]["n"]
        assert d["accuracy"] == pytest.approx((e["b"]["exact"] - e["a"]["exact"]) / n)
        assert d["program_generations"] == e["b"]["program_generations"] - e["a"]["program_generations"]
        assert d["repair_actions"] == e["b"]["repair_actions"] - e["a"]["repair_actions"]
        # the family interval of a pooled mean lies between the smallest and the largest family mean
        fam_diffs: dict[str, list[int]] = {}
        for i in pa:
            fam_diffs.setdefault(pa[i]["family"], []).append(int(pb[i]["correct"]) - int(pa[i]["correct"]))
        means = [sum(v) / len(v) for v in fam_diffs.values()]
        lo, hi = d["accuracy_ci95_family"]
        assert min(means) - 1e-9 <= lo <= d["accuracy"] <= hi <= max(means) + 1e-9
        assert d["verdict"] in ("better", "worse", "within noise")
        differ = sorted(i for i in pa if pa[i]["correct"] != pb[i]["correct"])
        assert [c["case_id"] for c in e["differing"]] == differ
        for c in e["differing"]:
            assert (c["a_correct"], c["b_correct"]) == (pa[c["case_id"]]["correct"], pb[c["case_id"]]["correct"])
            assert c["a_cost"]["program_generations"] == pa[c["case_id"]]["program_generations"]
            assert c["b_cost"]["repair_actions"] == pb[c["case_id"]]["repair_actions"]
            assert c["family"] == pa[c["case_id"]]["family"]
        n_differing += len(differ)
        if not differ:
            assert d["accuracy"] == 0 and d["accuracy_ci95_family"] == [0.0, 0.0]
    # fewer repairs lose the cases that needed one
    assert res["policies"]["always_tool_visible"]["differing"] and n_differing
    assert f"{n_differing} (policy, case) outcomes differ" in r.stdout and "| `always_tool_visible` |" in r.stdout
    md = (out / "compare.md").read_text()
    assert "| max repairs / program samples | 1 / 1 | 0 / 1 |" in md
    case = res["policies"]["always_tool_visible"]["differing"][0]["case_id"]
    assert "`" + case.replace("|", "\\|") + "`" in md.split("## Cases whose outcome differs")[1]


@pytest.mark.slow
def test_different_case_sets_are_refused_and_nothing_is_written(runs, tmp_path):
    line = one_error_line(cli("compare", runs / "a", runs / "c"))
    assert str(runs / "a") in line and str(runs / "c") in line and "trace_config.case_set" in line
    assert not (runs / "a" / "reports" / "compare_c").exists()
    # without the digest (no run_config.json), the test case ids decide
    shutil.copytree(runs / "c" / "reports", tmp_path / "c" / "reports", ignore=shutil.ignore_patterns("viewer", "cache"))
    (tmp_path / "c" / "reports" / "run_config.json").unlink()
    line = one_error_line(cli("compare", runs / "a", tmp_path / "c", "--out", tmp_path / "out"))
    assert "test case ids" in line and "only in A" in line and str(tmp_path / "c") in line
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_bad_files_get_one_line_naming_them(runs, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(runs / "b" / "reports", bad / "reports", ignore=shutil.ignore_patterns("viewer", "cache"))
    summary = bad / "reports" / "final_summary.json"
    good = summary.read_text()
    summary.write_text(good[: len(good) // 2])
    line = one_error_line(cli("compare", runs / "a", bad, "--out", tmp_path / "out"))
    assert str(summary) in line and "not valid JSON" in line
    summary.write_text(good)
    preds = bad / "reports" / "predictions" / "learned_rule.jsonl"
    preds.write_text(preds.read_text().replace('"correct": ', '"correct": "yes", "was": ', 1))
    line = one_error_line(cli("compare", runs / "a", bad, "--out", tmp_path / "out"))
    assert f"{preds} line 1" in line and "correct" in line
    preds.unlink()
    line = one_error_line(cli("compare", runs / "a", bad, "--out", tmp_path / "out"))
    assert str(preds) in line and "no such file" in line
    line = one_error_line(cli("compare", runs / "a", tmp_path / "missing"))
    assert str(tmp_path / "missing") in line
    line = one_error_line(cli("compare", runs / "a", runs / "cases"))
    assert str(runs / "cases" / "reports" / "final_summary.json") in line
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_view_lists_every_run_and_writes_an_index(runs, tmp_path):
    r = cli("view", runs)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    rows = {l.split()[0]: l for l in lines[1:] if l.strip() and not l.startswith("3 runs")}
    assert set(rows) == {"a", "b", "c"} and "3 runs; index: " in r.stdout
    for name in "abc":
        s = json.loads((runs / name / "reports" / "final_summary.json").read_text())
        lr = s["policy_results"]["learned_rule"]["test"]
        assert f"{lr['exact']}/{lr['n']}, {lr['program_generations']} gens" in rows[name]
        assert f"  {s['n_records']}  " in rows[name] and "synth" in rows[name]
    page = (runs / "runs.html").read_text()
    for name in "abc":
        assert f'href="{name}/reports/viewer/index.html"' in page
    # a run's own folder, --open (a "browser" that prints the address), nothing found
    r = cli("view", runs / "a" / "reports", "--out", tmp_path / "runs.html", "--open",
            env={**os.environ, "BROWSER": "echo"})
    assert r.returncode == 0 and (tmp_path / "runs.html").as_uri() in r.stdout, r.stdout + r.stderr
    assert one_error_line(cli("view", runs / "cases")).endswith("no run found (no reports/final_summary.json under it)")


def test_subcommands_have_their_own_help_and_the_run_help_names_them():
    r = cli("compare", "--help")
    assert r.returncode == 0 and "ROOT_A/reports/compare_<name of ROOT_B>" in r.stdout and "(default: test)" in r.stdout
    assert "live-tool-dagger compare ROOT_A ROOT_B" in cli("--help").stdout


def test_subcommand_flags_are_dataclass_fields_shown_by_the_run_formatter():
    """compare's and view's flags come from a dataclass each (controller.args, as the run's flags
    do), with the main command's help formatter; their defaults are the fields' defaults."""
    import dataclasses

    from controller.args import HelpFormatter
    from controller.cli import make_parser
    from controller.commands import CompareArgs, ViewArgs, compare_parser, view_parser

    assert make_parser().formatter_class is HelpFormatter
    for make, cls, words in ((compare_parser, CompareArgs, ["A", "B"]), (view_parser, ViewArgs, [])):
        parser, table = make()
        assert parser.formatter_class is HelpFormatter
        fields = dataclasses.fields(cls)
        assert [f.dest for f in table.values()] == [f.name for f in fields]
        ns = parser.parse_args(words)
        assert {f.name: getattr(ns, f.name) for f in fields} == {f.name: f.default for f in fields}
    help_text = cli("compare", "--help").stdout + cli("view", "--help").stdout
    assert "(default: 2000)" in help_text and "(default: 0)" in help_text and "(default: off)" in help_text


@pytest.mark.slow
def test_compare_writes_the_viewer_page_of_a_run_that_keeps_only_its_data(runs, tmp_path):
    """A committed study keeps viewer/data.json.gz alone: compare writes its page, so its links work."""
    for side in "ab":
        shutil.copytree(runs / side / "reports", tmp_path / side,
                        ignore=shutil.ignore_patterns("index.html", "cache", "compare_*"))
    r = cli("compare", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "out" / "compare.json").read_text())
    for side in "ab":
        page = tmp_path / side / "viewer" / "index.html"
        assert res[side]["viewer"] == str(page)
        assert page.read_bytes() == (runs / side / "reports" / "viewer" / "index.html").read_bytes()


@pytest.mark.slow
def test_bad_flags_get_one_line_naming_the_flag(runs):
    a, b = runs / "a", runs / "b"
    for words, flag in ((("compare", a, b, "--seed", "x"), "--seed"),
                        (("compare", a, b, "--bootstrap-resamples", "0"), "--bootstrap-resamples must be at least 1"),
                        (("compare", a, b, "--split", "nope"), "--split"),
                        (("compare", a, b, "--config", "x.toml"), "--config"),
                        (("view", runs, "--open", "yes"), "yes"),
                        (("view", runs, "--out"), "--out")):
        assert flag in one_error_line(cli(*words)), words


# ----------------------------------------------------------------------------- the page, in a browser


@pytest.mark.slow
def test_compare_page_links_each_run_viewer_at_the_case(browser, runs, compared):
    _, out, res = compared
    errors = []
    page = browser.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((out / "compare.html").as_uri())
    assert page.locator("#policies tbody tr").count() == len(res["policies"])
    assert page.locator("script, #policies b, table.differing b").count() == 0  # no script, markup shown as text
    policy = "always_tool_visible"
    case = res["policies"][policy]["differing"][0]["case_id"]
    table = page.locator(f'table.differing[data-policy="{policy}"]')
    assert table.locator("tbody tr code").first.text_content() == case
    for side in ("a", "b"):
        link = table.locator(f"a.case-{side}").first
        assert link.get_attribute("data-case") == case
        link.click()
        page.wait_for_selector("body[data-ready]", state="attached", timeout=20_000)
        url = urlparse(page.url)
        assert Path(unquote(url.path)) == (runs / side / "reports" / "viewer" / "index.html").resolve()
        assert url.fragment == "case/" + quote(case, safe="")
        page.wait_for_function("t => document.getElementById('case-title')?.textContent === t", arg=case)
        page.go_back()
        page.wait_for_selector("table.differing")
    assert not errors, errors
