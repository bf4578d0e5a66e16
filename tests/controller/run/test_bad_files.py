"""Every file a run reads, and every kind of flag, broken one way at a time: one line on stderr
naming the flag or the file, exit status 2, no traceback, and the run's folder exactly as it was
(nothing moved aside into ``reports.<UTC>/``, nothing written or changed).

One small traced run (the module fixture) is copied per row; the row breaks the copy (or a file
beside it) and runs the command in-process (``controller.cli.main``: the same code path as the
script, without a child's start-up per row). A torn *last* line of the trace file is a killed
run's artefact, repaired on ``--resume`` (tests/controller/run/test_resume_kill.py); a torn line
anywhere else is an error naming the file and the line.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import traceback
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import pytest

from controller import cli
from e2e_helpers import CLI, small_case_dir


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """A traced run over 6 of 16 cases in 8 families (--limit-total deals them round-robin)."""
    base = tmp_path_factory.mktemp("bad_files")
    cases = small_case_dir(base / "cases", families=8, per_family=2)
    r = subprocess.run([sys.executable, str(CLI), "--root", str(base / "run"), "--cases", str(cases),
                        "--generate-traces", "--limit-total", "6", "--max-repairs", "1", "--no-progress",
                        "--test-families", "1", "--dev-families", "1"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return base


# ---- breaking things --------------------------------------------------------------------------

def lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def edit_json(path: Path, change: Callable[[dict], object]) -> None:
    obj = json.loads(path.read_text())
    out = change(obj)
    path.write_text(json.dumps(obj if out is None else out))


def edit_records(path: Path, change: Callable[[list[dict]], list]) -> None:
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in change(recs)))


def write(name: str, content: str | bytes):
    """Overwrite ``reports/name``."""
    def breaker(t: "Row") -> None:
        p = t.reports / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return breaker


def torn_middle(name="fresh_traces.jsonl"):
    def breaker(t):
        ls = lines(t.reports / name)
        ls[1] = ls[1][: len(ls[1]) // 2] + "\n"  # line 2 cut off, lines after it intact
        (t.reports / name).write_text("".join(ls))
    return breaker


def half_file(name: str):
    def breaker(t):
        data = (t.reports / name).read_bytes()
        (t.reports / name).write_bytes(data[: len(data) // 2])
    return breaker


def records(change):
    return lambda t: edit_records(t.reports / "fresh_traces.jsonl", change)


def first_record(change):
    def on(recs):
        change(recs[0])
        return recs
    return records(on)


def run_config(change):
    return lambda t: edit_json(t.reports / "run_config.json", change)


def manifest(change):
    return lambda t: edit_json(t.reports / "split_manifest.json", change)


def tagged(t):
    """The run's trace file and run config as a ``--tag t`` run's."""
    for name in ("fresh_traces", "run_config"):
        ext = ".jsonl" if name == "fresh_traces" else ".json"
        (t.reports / f"{name}{ext}").rename(t.reports / f"{name}_t{ext}")


def then(*breakers):
    def breaker(t):
        for b in breakers:
            b(t)
    return breaker


def side_file(name: str, content: str | bytes):
    """A file beside the run (``{side}/name`` in the args)."""
    def breaker(t):
        p = t.side / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return breaker


def side_copy(src: str, name: str, change=None):
    """A copy of ``reports/src`` beside the run, changed by ``change`` (a JSON edit)."""
    def breaker(t):
        p = t.side / name
        p.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(t.reports / src, p)
        if change is not None:
            edit_json(p, change) if p.suffix == ".json" else change(p)
    return breaker


def case_file(rel: str, content: str | bytes | None):
    """Overwrite (None: delete) one case file of the row's own copy of the cases."""
    def breaker(t):
        p = t.cases / rel
        if content is None:
            p.unlink()
        else:
            p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return breaker


def replay_file(change):
    """A replay trace beside the run: the run's trace file, changed (a function of its text)."""
    def breaker(t):
        (t.side / "replay.jsonl").write_text(change((t.reports / "fresh_traces.jsonl").read_text()))
    return breaker


def replace_with_dir(name: str):
    def breaker(t):
        (t.reports / name).unlink()
        (t.reports / name).mkdir()
    return breaker


def foreign_ids(recs):
    for r in recs:
        r["case_id"] = "elsewhere/" + r["case_id"]
        r["family"] = "elsewhere_" + r["family"]
    return recs


CASE = "extract_year/extract_year_1.json"  # a case of the traced run (--limit-total 6 took one per family)
GOOD_CASE = json.loads((Path(__file__).resolve().parents[3] / "cases" / "data" / CASE).read_text())


def case_json(**changes) -> str:
    return json.dumps({**GOOD_CASE, **changes})


GOOD_STUDY = ('name = "s"\ncost_unit = "generations"\n[[hypotheses]]\nname = "h"\nprimary = true\n'
              'kind = "accuracy_diff"\npolicies = ["always_tool_visible", "direct_only"]\nsplit = "test"\n')


# ---- the rows ---------------------------------------------------------------------------------

TRACE, RESUME = [], ["--generate-traces", "--resume", "--max-repairs", "1"]  # re-analysis; continuing the traced run
FRESH = ["--generate-traces"]
REPLAY = FRESH + ["--backend", "replay", "--limit-total", "6", "--replay"]  # the traced run's cases


@dataclass
class Row:
    id: str
    args: list
    needles: tuple
    breaker: Callable | None = None
    # filled per test
    root: Path | None = None
    side: Path | None = None
    cases: Path | None = None

    @property
    def reports(self) -> Path:
        return self.root / "reports"


ROWS = [
    # the trace file: re-analysis and --resume
    Row("trace_missing", TRACE, ("fresh_traces.jsonl", "--generate-traces"), lambda t: (t.reports / "fresh_traces.jsonl").unlink()),
    Row("trace_empty", TRACE, ("fresh_traces.jsonl", "no trace records"), write("fresh_traces.jsonl", "")),
    Row("trace_blank_lines", TRACE, ("fresh_traces.jsonl", "no trace records"), write("fresh_traces.jsonl", "\n\n")),
    Row("trace_only_a_torn_line", TRACE, ("fresh_traces.jsonl", "no trace records"), write("fresh_traces.jsonl", '{"schema_')),
    Row("trace_torn_middle", TRACE, ("fresh_traces.jsonl", "line 2", "not valid JSON"), torn_middle()),
    Row("trace_torn_middle_resume", RESUME, ("fresh_traces.jsonl", "line 2", "not valid JSON"), torn_middle()),
    Row("trace_not_json", TRACE, ("fresh_traces.jsonl", "line 1", "not valid JSON"), write("fresh_traces.jsonl", "garbage\nmore\n")),
    Row("trace_not_utf8", TRACE, ("fresh_traces.jsonl", "line 1"), write("fresh_traces.jsonl", b"\xff\xfe\x00{}\n")),
    Row("trace_not_object", TRACE, ("fresh_traces.jsonl", "line 1", "JSON object"), write("fresh_traces.jsonl", "[1, 2]\n")),
    Row("trace_schema_version_99", TRACE, ("fresh_traces.jsonl", "line 1", "schema version 99"),
        first_record(lambda r: r.update(schema_version=99))),
    Row("trace_schema_version_99_resume", RESUME, ("fresh_traces.jsonl", "schema version 99"),
        first_record(lambda r: r.update(schema_version=99))),
    Row("trace_schema_version_missing", TRACE, ("fresh_traces.jsonl", "schema version None"),
        first_record(lambda r: r.pop("schema_version"))),
    Row("trace_schema_version_string", TRACE, ("fresh_traces.jsonl", "schema version '2'"),
        first_record(lambda r: r.update(schema_version="2"))),
    Row("trace_wrong_type", TRACE, ("fresh_traces.jsonl", "line 1", "trace schema"), first_record(lambda r: r.update(case_id=5))),
    Row("trace_wrong_type_resume", RESUME, ("fresh_traces.jsonl", "line 1", "trace schema"),
        first_record(lambda r: r.update(rounds="none"))),
    Row("trace_missing_key", TRACE, ("fresh_traces.jsonl", "trace schema", "hidden"), first_record(lambda r: r.pop("hidden"))),
    Row("trace_duplicate_case", TRACE, ("fresh_traces.jsonl", "line 7", "blank_dedupe/blank_dedupe_1"),
        records(lambda rs: rs + rs[:1])),
    Row("trace_duplicate_case_resume", RESUME, ("fresh_traces.jsonl", "line 7"), records(lambda rs: rs + rs[:1])),
    Row("trace_is_a_directory", TRACE, ("fresh_traces.jsonl",), replace_with_dir("fresh_traces.jsonl")),
    # a re-analysis reads its cases from the records (no case file): traces of other families than the
    # split kept beside them are refused by that split
    Row("trace_of_other_cases", TRACE, ("split_manifest.json", "no split for families", "elsewhere_"),
        records(foreign_ids)),
    # a --tag run's files
    Row("tag_trace_missing", ["--tag", "t"], ("fresh_traces_t.jsonl", "--generate-traces")),
    Row("tag_trace_garbage", ["--tag", "t"], ("fresh_traces_t.jsonl", "line 2"), then(tagged, torn_middle("fresh_traces_t.jsonl"))),
    Row("tag_run_config_garbage", ["--tag", "t"], ("run_config_t.json", "not valid JSON"),
        then(tagged, write("run_config_t.json", "garbage"))),
    Row("tag_with_a_slash", ["--tag", "../x"], ("--tag", "'../x'")),
    Row("tag_empty", ["--tag", ""], ("--tag",)),
    # run_config.json beside the traces
    Row("run_config_garbage", TRACE, ("run_config.json", "not valid JSON"), write("run_config.json", "garbage")),
    Row("run_config_garbage_resume", RESUME, ("run_config.json", "not valid JSON"), write("run_config.json", "garbage")),
    Row("run_config_empty", TRACE, ("run_config.json", "not valid JSON"), write("run_config.json", "")),
    Row("run_config_half", RESUME, ("run_config.json", "not valid JSON"), half_file("run_config.json")),
    Row("run_config_not_utf8", TRACE, ("run_config.json",), write("run_config.json", b'{"trace_config": "\xff"}')),
    Row("run_config_a_list", TRACE, ("run_config.json", "JSON array, expected an object"), write("run_config.json", "[1, 2]")),
    Row("run_config_a_list_resume", RESUME, ("run_config.json", "expected an object"), write("run_config.json", "[]")),
    Row("run_config_no_trace_config", TRACE, ("run_config.json", "trace_config"), run_config(lambda c: c.pop("trace_config"))),
    Row("run_config_no_trace_config_resume", RESUME, ("run_config.json", "trace_config"),
        run_config(lambda c: c.pop("trace_config"))),
    Row("run_config_trace_config_a_string", RESUME, ("run_config.json", "trace_config"),
        run_config(lambda c: c.update(trace_config="synth"))),
    Row("run_config_selection_a_list", TRACE, ("run_config.json", "selection"), run_config(lambda c: c.update(selection=[6]))),
    Row("run_config_selection_bad_value", TRACE, ("run_config.json", "selection", "limit_total"),
        run_config(lambda c: c.update(selection={"limit_total": "six"}))),
    Row("run_config_selection_zero", RESUME, ("run_config.json", "limit_total"),
        run_config(lambda c: c.update(selection={"limit_total": 0}))),
    Row("run_config_selection_unknown_key", TRACE, ("run_config.json", "selection", "limit"),
        run_config(lambda c: c.update(selection={"limit": 6}))),
    Row("run_config_started_a_number", TRACE, ("run_config.json", "traces_started_utc"),
        run_config(lambda c: c.update(traces_started_utc=5))),
    Row("run_config_is_a_directory", TRACE, ("run_config.json",), replace_with_dir("run_config.json")),
    # the split manifest kept in reports/ (re-analysis and --resume read it)
    Row("kept_manifest_garbage", TRACE, ("split_manifest.json", "not valid JSON"), write("split_manifest.json", "garbage")),
    Row("kept_manifest_garbage_resume", RESUME, ("split_manifest.json", "not valid JSON"), write("split_manifest.json", "garbage")),
    Row("kept_manifest_empty", TRACE, ("split_manifest.json", "not valid JSON"), write("split_manifest.json", "")),
    Row("kept_manifest_half", TRACE, ("split_manifest.json", "not valid JSON"), half_file("split_manifest.json")),
    Row("kept_manifest_a_list", TRACE, ("split_manifest.json", "split_families"), write("split_manifest.json", "[]")),
    Row("kept_manifest_no_split_families", TRACE, ("split_manifest.json", "split_families"),
        manifest(lambda m: m.pop("split_families"))),
    Row("kept_manifest_families_not_names", TRACE, ("split_manifest.json", "split_families.train"),
        manifest(lambda m: m["split_families"].update(train=[1, 2]))),
    Row("kept_manifest_family_twice", TRACE, ("split_manifest.json", "fold_no_header"),
        manifest(lambda m: m["split_families"]["train"].append("fold_no_header"))),
    Row("kept_manifest_version_99", TRACE, ("split_manifest.json", "version 99"), manifest(lambda m: m.update(version=99))),
    Row("kept_manifest_method_a_number", TRACE, ("split_manifest.json", "method"), manifest(lambda m: m.update(method=3))),
    Row("kept_manifest_probes_not_ids", TRACE, ("split_manifest.json", "probe_case_ids"),
        manifest(lambda m: m.update(probe_case_ids="x"))),
    Row("kept_manifest_misses_a_family", TRACE, ("split_manifest.json", "no split for families", "extract_year"),
        manifest(lambda m: m["split_families"]["train"].remove("extract_year"))),
    # --split-manifest FILE
    Row("split_manifest_missing", ["--split-manifest", "{side}/missing.json"], ("--split-manifest", "missing.json", "no such file")),
    Row("split_manifest_a_directory", ["--split-manifest", "{side}"], ("--split-manifest",)),
    Row("split_manifest_garbage", ["--split-manifest", "{side}/m.json"], ("--split-manifest", "m.json", "not valid JSON"),
        side_file("m.json", "garbage")),
    Row("split_manifest_empty", ["--split-manifest", "{side}/m.json"], ("--split-manifest", "not valid JSON"), side_file("m.json", "")),
    Row("split_manifest_wrong_shape", ["--split-manifest", "{side}/m.json"], ("--split-manifest", "split_families"),
        side_copy("split_manifest.json", "m.json", lambda m: m.update(split_families={"train": []}))),
    Row("split_manifest_version_99", FRESH + ["--split-manifest", "{side}/m.json"], ("--split-manifest", "version 99"),
        side_copy("split_manifest.json", "m.json", lambda m: m.update(version=99))),
    Row("split_manifest_misses_families", FRESH + ["--split-manifest", "{side}/m.json"],
        ("--split-manifest", "no split for families"),
        side_copy("split_manifest.json", "m.json", lambda m: m.update(split_families={"train": ["a"], "dev": ["b"], "test": ["c"]}))),
    # the selection and the split request
    Row("limit_total_leaves_two_families", FRESH + ["--limit-total", "2"], ("--limit-total 2", "2 of the 8 families")),
    Row("limit_total_with_cases_per_family", FRESH + ["--cases-per-family", "1", "--limit-total", "1"], ("--cases-per-family 1", "--limit-total 1", "1 of the 8 families")),
    Row("test_dev_families_leave_no_train", FRESH + ["--test-families", "4", "--dev-families", "4"], ("--test-families",)),
    Row("test_families_zero", FRESH + ["--test-families", "0"], ("--test-families", "at least 1")),
    Row("test_dev_families_after_limit_total", FRESH + ["--limit-total", "3", "--test-families", "1", "--dev-families", "2"],
        ("--test-families", "--limit-total")),
    # case files (--cases DIR): each row breaks its own copy
    Row("case_dir_missing", FRESH + ["--cases", "{side}/nope"], ("--cases", "nope", "no such directory")),
    Row("case_dir_a_file", FRESH + ["--cases", "{side}/f.json"], ("--cases", "not a directory"), side_file("f.json", "{}")),
    Row("case_dir_empty", FRESH + ["--cases", "{side}/empty"], ("--cases", "no case files"), side_file("empty/README", "")),
    Row("case_file_empty", FRESH, ("--cases", "extract_year_1.json", "not valid JSON"), case_file(CASE, "")),
    Row("case_file_half", FRESH, ("--cases", "extract_year_1.json", "not valid JSON"),
        case_file(CASE, case_json()[:40])),
    Row("case_file_garbage", FRESH, ("--cases", "extract_year_1.json", "not valid JSON"), case_file(CASE, "garbage")),
    Row("case_file_a_list", FRESH, ("--cases", "extract_year_1.json", "expected an object"), case_file(CASE, "[]")),
    Row("case_file_missing_key", FRESH, ("--cases", "extract_year_1.json", "TestAnswer"),
        case_file(CASE, json.dumps({k: v for k, v in GOOD_CASE.items() if k != "TestAnswer"}))),
    Row("case_file_cell_a_number", FRESH, ("--cases", "extract_year_1.json", "TestingTable"),
        case_file(CASE, case_json(TestingTable=[[1]]))),
    Row("case_file_test_name_a_number", FRESH, ("--cases", "extract_year_1.json", "TestName"), case_file(CASE, case_json(TestName=3))),
    Row("case_file_num_samples_bad", FRESH, ("--cases", "extract_year_1.json", "NumSamples"),
        case_file(CASE, case_json(NumSamples="two"))),
    Row("case_file_missing_resume", RESUME, ("fresh_traces.jsonl", "settings"), case_file(CASE, None)),
    # --study FILE
    Row("study_missing", TRACE + ["--study", "{side}/s.toml"], ("--study", "s.toml", "cannot read")),
    Row("study_empty", TRACE + ["--study", "{side}/s.toml"], ("--study", "s.toml"), side_file("s.toml", "")),
    Row("study_not_toml", TRACE + ["--study", "{side}/s.toml"], ("--study", "s.toml", "not valid TOML"), side_file("s.toml", "garbage")),
    Row("study_half", TRACE + ["--study", "{side}/s.toml"], ("--study", "s.toml"), side_file("s.toml", GOOD_STUDY[:70])),
    Row("study_not_json", TRACE + ["--study", "{side}/s.json"], ("--study", "s.json", "not valid JSON"), side_file("s.json", "{")),
    Row("study_json_a_list", TRACE + ["--study", "{side}/s.json"], ("--study", "s.json"), side_file("s.json", "[]")),
    Row("study_hypotheses_a_string", TRACE + ["--study", "{side}/s.toml"], ("--study", "hypotheses"),
        side_file("s.toml", 'name = "s"\nhypotheses = "all"\n')),
    Row("study_unknown_key", TRACE + ["--study", "{side}/s.toml"], ("--study", "colour"), side_file("s.toml", GOOD_STUDY.replace(
        'name = "s"\n', 'name = "s"\ncolour = "red"\n', 1))),
    Row("study_unknown_policy", TRACE + ["--study", "{side}/s.toml"], ("--study", "clairvoyant"),
        side_file("s.toml", GOOD_STUDY.replace("direct_only", "clairvoyant"))),
    Row("study_alpha_a_string", TRACE + ["--study", "{side}/s.toml"], ("--study", "alpha"),
        side_file("s.toml", 'alpha = "low"\n' + GOOD_STUDY)),
    Row("study_a_directory", TRACE + ["--study", "{side}"], ("--study",)),
    # --config FILE
    Row("config_missing", ["--config", "{side}/c.toml"], ("--config", "c.toml", "cannot read")),
    Row("config_not_toml", ["--config", "{side}/c.toml"], ("--config", "c.toml", "TOML"), side_file("c.toml", "garbage")),
    Row("config_half", ["--config", "{side}/c.toml"], ("--config", "c.toml", "TOML"), side_file("c.toml", 'cases = "lib')),
    Row("config_not_utf8", ["--config", "{side}/c.toml"], ("--config", "c.toml"), side_file("c.toml", b'cases = "\xff"\n')),
    Row("config_a_directory", ["--config", "{side}"], ("--config",)),
    Row("config_unknown_key", ["--config", "{side}/c.toml"], ("--config", "colour"), side_file("c.toml", "colour = 1\n")),
    Row("config_unknown_table", ["--config", "{side}/c.toml"], ("--config", "rollouts"), side_file("c.toml", "[rollouts]\nmax_repairs = 1\n")),
    Row("config_int_a_float", ["--config", "{side}/c.toml"], ("--config", "max_repairs"), side_file("c.toml", "max_repairs = 1.5\n")),
    Row("config_int_a_bool", ["--config", "{side}/c.toml"], ("--config", "max_repairs"), side_file("c.toml", "max_repairs = true\n")),
    Row("config_bool_a_string", ["--config", "{side}/c.toml"], ("--config", "resume"), side_file("c.toml", 'resume = "yes"\n')),
    Row("config_list_of_bad_numbers", ["--config", "{side}/c.toml"], ("--config", "lora_frontier"),
        side_file("c.toml", 'lora_frontier = ["a"]\n')),
    Row("config_str_a_list", ["--config", "{side}/c.toml"], ("--config", "tag"), side_file("c.toml", "tag = [1]\n")),
    Row("config_choice_not_a_choice", ["--config", "{side}/c.toml"], ("--distributed-executor-backend", "slurm"),
        side_file("c.toml", 'distributed_executor_backend = "slurm"\n')),
    Row("config_float_inf", ["--config", "{side}/c.toml"], ("--config", "temperature", "finite"),
        side_file("c.toml", "temperature = inf\n")),
    Row("config_bad_value", ["--config", "{side}/c.toml"], ("--max-repairs", ">= 0"), side_file("c.toml", "max_repairs = -1\n")),
    # --replay FILE (the replay backend)
    Row("replay_missing", REPLAY + ["{side}/replay.jsonl"], ("--replay", "replay.jsonl")),
    Row("replay_empty", REPLAY + ["{side}/replay.jsonl"], ("--replay", "replay.jsonl"),
        replay_file(lambda text: "")),
    Row("replay_torn_middle", REPLAY + ["{side}/replay.jsonl"], ("--replay", "line 2"),
        replay_file(lambda text: "".join(ln[:50] + "\n" if i == 1 else ln for i, ln in enumerate(text.splitlines(True))))),
    Row("replay_not_json", REPLAY + ["{side}/replay.jsonl"], ("--replay", "line 1"),
        replay_file(lambda text: "garbage\n" + text)),
    Row("replay_rounds_a_string", REPLAY + ["{side}/replay.jsonl"], ("--replay", "line 1"),
        replay_file(lambda text: json.dumps({**json.loads(text.splitlines()[0]), "rounds": "x"}) + "\n" + text)),
    Row("replay_round_not_an_object", REPLAY + ["{side}/replay.jsonl"], ("--replay", "line 1"),
        replay_file(lambda text: json.dumps({**json.loads(text.splitlines()[0]), "rounds": [3]}) + "\n" + text)),
    Row("replay_schema_version_99", REPLAY + ["{side}/replay.jsonl"],
        ("--replay", "line 1", "schema version 99"),
        replay_file(lambda text: json.dumps({**json.loads(text.splitlines()[0]), "schema_version": 99}) + "\n" + text)),
    Row("replay_does_not_hold_the_cases", FRESH + ["--backend", "replay", "--replay", "{side}/replay.jsonl"],
        ("--replay", "replay.jsonl", "no record of 10 of the 16 cases"), replay_file(lambda text: text)),
    Row("replay_a_directory", REPLAY + ["{side}"], ("--replay",)),
    # other paths a run reads
    Row("base_url_file_missing", FRESH + ["--backend", "openai", "--model", "m", "--base-url", "@{side}/urls.txt"],
        ("--base-url", "urls.txt")),
    Row("base_url_file_empty", FRESH + ["--backend", "openai", "--model", "m", "--base-url", "@{side}/urls.txt"],
        ("--base-url", "urls.txt", "no endpoint"), side_file("urls.txt", "")),
    Row("policy_model_config_garbage", TRACE + ["--train-lora", "--policy-model", "{side}/model"], ("--policy-model", "config.json"),
        side_file("model/config.json", "garbage")),
    Row("reports_is_a_file", FRESH, ("reports", "not a directory"),
        lambda t: (shutil.rmtree(t.reports), t.reports.write_text("x"))),
    Row("root_is_a_file", FRESH + ["--root", "{side}/f"], ("--root", "not a directory"), side_file("f", "x")),
    # one bad value of each kind of flag
    Row("int_not_a_number", ["--max-repairs", "two"], ("--max-repairs", "integer")),
    Row("int_a_float", ["--workers", "1.5"], ("--workers", "integer")),
    Row("int_out_of_range", ["--limit-total", "0"], ("--limit-total", "> 0")),
    Row("float_not_a_number", ["--temperature", "warm"], ("--temperature", "number")),
    Row("float_nan", ["--temperature", "nan"], ("--temperature",)),
    Row("float_nan_beta", ["--dagger-beta", "nan"], ("--dagger-beta",)),
    Row("float_inf_timeout", ["--exec-timeout", "inf"], ("--exec-timeout",)),
    Row("bool_with_a_value", ["--resume=yes"], ("--resume",)),
    Row("negated_bool_with_a_value", ["--no-progress=no"], ("--no-progress",)),
    Row("choice_not_a_choice", ["--distributed-executor-backend", "slurm"], ("--distributed-executor-backend", "slurm")),
    Row("choice_cost", ["--cost", "dollars"], ("--cost", "dollars")),
    Row("list_bad_item", ["--lora-frontier", "0,abc"], ("--lora-frontier", "'abc'")),
    Row("list_empty_item", ["--policies", "direct_only,,oracle_seq"], ("--policies",)),
    Row("list_unknown_name", ["--policies", "clairvoyant"], ("--policies", "clairvoyant")),
    Row("missing_value", ["--max-repairs"], ("--max-repairs",)),
    Row("unknown_flag", ["--colour", "1"], ("--colour",)),
    Row("backend_unknown", FRESH + ["--backend", "gpt9"], ("--backend", "gpt9")),
]


# ---- running a row ----------------------------------------------------------------------------

def listing(*folders: Path) -> dict:
    """Every entry under the folders: its kind, size and content hash (a file), so any change shows."""
    out = {}
    for folder in folders:
        if folder.is_file():
            out[str(folder)] = ("file", hashlib.sha256(folder.read_bytes()).hexdigest())
            continue
        for p in sorted(folder.rglob("*")):
            if p.is_dir():
                out[str(p)] = ("dir",)
            else:
                out[str(p)] = ("file", p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def run_main(argv, capsys) -> tuple[int, str, str]:
    saved = warnings.showwarning
    try:
        code = cli.main(argv)
    except SystemExit as exit_:
        code = exit_.code
    except BaseException:  # a traceback is exactly what a row must not give
        code = "raised"
        print(traceback.format_exc(), file=sys.stderr)
    finally:
        warnings.showwarning = saved
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_bad_input_is_one_line_and_moves_nothing(traced, tmp_path, capsys, row):
    row = replace(row, root=tmp_path / "run", side=tmp_path / "side", cases=tmp_path / "cases")
    shutil.copytree(traced / "run", row.root, symlinks=True)
    shutil.copytree(traced / "cases", row.cases)
    row.side.mkdir()
    if row.breaker is not None:
        row.breaker(row)
    before = listing(tmp_path)
    args = [a.format(side=row.side) for a in row.args]
    argv = ["--root", str(row.root), "--cases", str(row.cases), "--no-progress", *args]
    code, out, err = run_main(argv, capsys)
    err = err.strip()
    assert code == 2, f"exit {code}\nstderr: {err}\nstdout: {out[-2000:]}"
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    for needle in row.needles:
        assert needle in err, err
    assert listing(tmp_path) == before, f"the folder changed: {err}"


def test_a_torn_last_line_is_a_killed_run_and_resume_repairs_it(traced, tmp_path, capsys):
    """The one damage that is not an error: the last line a killed run left half-written."""
    root = tmp_path / "run"
    shutil.copytree(traced / "run", root)
    trace = root / "reports" / "fresh_traces.jsonl"
    whole = lines(trace)
    trace.write_text("".join(whole[:-1]) + whole[-1][:40])  # no newline: torn
    argv = ["--root", str(root), "--cases", str(traced / "cases"), "--no-progress", *RESUME]
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
    assert "dropped a torn last line" in out
    assert [json.loads(line)["case_id"] for line in lines(trace)] == [json.loads(line)["case_id"] for line in whole]
