"""Bad input gets one line naming the file or flag and the problem, exit status 2, nothing written."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_helpers import CLI, small_case_dir

SCRIPT = CLI
GOOD = {"InputTable": [["Ann Lee", "12"]], "OutputTable": [["Ann Lee"]],
        "TestingTable": [["Bo Chen", "7"]], "TestAnswer": [["Bo Chen"]]}


def cli(root, *args):
    r = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "--no-progress", *args],
                       capture_output=True, text=True, timeout=300)
    return r.returncode, r.stderr.strip()


def write_cases(d: Path, files: dict) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    for i in range(3):  # enough valid families for a split
        (d / f"ok{i}_1.json").write_text(json.dumps(GOOD))
    return d


def assert_refused(tmp_path, rc, err, *needles):
    assert rc == 2, err
    assert "\n" not in err, err  # one line
    for n in needles:
        assert n in err, err
    assert not (tmp_path / "root" / "reports").exists()  # nothing written


BAD_CASES = {
    "not_json": ({"bad_1.json": b"{not json"}, ("bad_1.json", "JSON")),
    "not_utf8": ({"bad_1.json": b'{"InputTable": "\xff\xfe"}'}, ("bad_1.json", "UTF-8")),
    "missing_key": ({"bad_1.json": {k: v for k, v in GOOD.items() if k != "TestingTable"}}, ("bad_1.json", "TestingTable")),
    "table_not_list": ({"bad_1.json": dict(GOOD, InputTable="Ann,12")}, ("bad_1.json", "InputTable")),
    "row_not_list": ({"bad_1.json": dict(GOOD, InputTable=["Ann", "12"])}, ("bad_1.json", "InputTable")),
    "non_string_cell": ({"bad_1.json": dict(GOOD, InputTable=[["Ann", 12]])}, ("bad_1.json", "InputTable")),
    "empty_example": ({"bad_1.json": dict(GOOD, OutputTable=[])}, ("bad_1.json", "OutputTable")),
    "duplicate_id": ({"dup_1.json": GOOD, "dup_1.txt": GOOD}, ("dup_1",)),
}


@pytest.mark.parametrize("kind", sorted(BAD_CASES))
def test_malformed_case_files(tmp_path, kind):
    files, needles = BAD_CASES[kind]
    cases = write_cases(tmp_path / "cases", files)
    rc, err = cli(tmp_path / "root", "--cases", str(cases), "--generate-traces")
    assert_refused(tmp_path, rc, err, "--cases", *needles)


def test_missing_and_empty_cases_dir(tmp_path):
    rc, err = cli(tmp_path / "root", "--cases", str(tmp_path / "nope"), "--generate-traces")
    assert_refused(tmp_path, rc, err, "nope")
    (tmp_path / "empty").mkdir()
    rc, err = cli(tmp_path / "root", "--cases", str(tmp_path / "empty"), "--generate-traces")
    assert_refused(tmp_path, rc, err, "empty")


def test_oversized_table_is_refused_with_its_limit(tmp_path):
    big = dict(GOOD, TestingTable=[["x"] * 60 for _ in range(20_001)])
    cases = write_cases(tmp_path / "cases", {"big_1.json": big})
    rc, err = cli(tmp_path / "root", "--cases", str(cases), "--generate-traces")
    assert_refused(tmp_path, rc, err, "big_1.json", "20000")


@pytest.mark.parametrize("args,needle", [
    (["--backend", "gpt9"], "--backend"),
    (["--policies", "always_tool_visible,clairvoyant"], "--policies"),
    (["--test-families", "30", "--dev-families", "30"], "--test-families"),
    (["--cv-folds", "1"], "--cv-folds"),
    (["--max-repairs", "-1"], "--max-repairs"),
    (["--cost", "dollars"], "--cost"),
    (["--split-seeds", "3"], "--split-seeds"),  # repeats CV: needs --cv-folds
])
def test_bad_flags(tmp_path, args, needle):
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=1)
    rc, err = cli(tmp_path / "root", "--cases", str(cases), "--generate-traces", *args)
    assert_refused(tmp_path, rc, err, needle)


def test_policy_model_without_a_model(tmp_path):
    (tmp_path / "empty_model").mkdir()
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=1)
    rc, err = cli(tmp_path / "root", "--cases", str(cases), "--generate-traces", "--train-lora",
                  "--policy-model", str(tmp_path / "empty_model"))
    assert_refused(tmp_path, rc, err, "--policy-model", "empty_model")


def test_trace_file_of_another_schema_version(tmp_path):
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=1)
    reports = tmp_path / "root" / "reports"
    reports.mkdir(parents=True)
    trace = reports / "fresh_traces.jsonl"
    trace.write_text(json.dumps({"schema_version": 99, "case_id": "x"}) + "\n")
    before = sorted(p.name for p in reports.iterdir())
    rc, err = cli(tmp_path / "root", "--cases", str(cases))
    assert rc == 2 and "schema version" in err and "fresh_traces.jsonl" in err and "\n" not in err
    rc, err = cli(tmp_path / "root", "--cases", str(cases), "--generate-traces", "--resume")
    assert rc == 2 and "schema version" in err
    assert sorted(p.name for p in reports.iterdir()) == before  # nothing written, nothing lost
    assert json.loads(trace.read_text())["schema_version"] == 99


def test_reusing_traces_that_do_not_exist(tmp_path):
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=1)
    rc, err = cli(tmp_path / "root", "--cases", str(cases))
    assert_refused(tmp_path, rc, err, "--generate-traces")


@pytest.mark.parametrize("args,flag,needle", [
    (["--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"], "--backend", "cannot reach"),
    (["--backend", "hf", "--model", "/nonexistent/model"], "--backend", "/nonexistent/model"),
    (["--backend", "replay", "--replay", "/nonexistent/traces.jsonl"], "--replay", "/nonexistent/traces.jsonl"),
])
def test_backend_that_cannot_start(tmp_path, args, flag, needle):
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=1)
    rc, err = cli(tmp_path / "root", "--cases", str(cases), "--generate-traces", *args)
    assert_refused(tmp_path, rc, err, flag, needle)


def test_too_few_families_and_an_impossible_split_leave_the_previous_run_in_place(tmp_path):
    """Split requests are checked before the previous run's reports/ is moved aside."""
    reports = tmp_path / "root" / "reports"
    reports.mkdir(parents=True)
    (reports / "report.md").write_text("the previous run\n")
    two = small_case_dir(tmp_path / "two", families=2, per_family=1)
    rc, err = cli(tmp_path / "root", "--cases", str(two), "--generate-traces")
    assert rc == 2 and err.startswith("error: --cases") and "3 families" in err and "\n" not in err.strip()
    four = small_case_dir(tmp_path / "four", families=4, per_family=1)
    rc, err = cli(tmp_path / "root", "--cases", str(four), "--generate-traces", "--test-families", "2",
                  "--dev-families", "2")
    assert rc == 2 and "--test-families" in err
    assert (reports / "report.md").read_text() == "the previous run\n"
    assert not list((tmp_path / "root").glob("reports.*"))
