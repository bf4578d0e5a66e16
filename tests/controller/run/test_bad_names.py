"""A case set or hub model that does not exist: one line saying what would work, exit status 2,
nothing written, and no wait on a network that is not there."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tracegen.models import ModelNotInstalled, check_hub_model, hub_offline_reason

from e2e_helpers import CLI  # noqa: E402

SCRIPT = CLI


def cli(root, *args, env=None):
    r = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "--no-progress", *args],
                       capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})
    return r.returncode, r.stderr.strip()


def assert_refused(root, rc, err, *needles):
    assert rc == 2, err
    assert err and "\n" not in err, err  # one line
    for n in needles:
        assert n in err, err
    assert not (root / "reports").exists()  # nothing written


def test_unknown_case_set_lists_the_valid_names(tmp_path):
    rc, err = cli(tmp_path / "root", "--cases", "foofha", "--generate-traces")
    assert_refused(tmp_path / "root", rc, err, "--cases", "foofha", "unknown case set", "foofah", "library", "directory")


def test_case_path_that_is_a_file(tmp_path):
    (tmp_path / "cases.json").write_text("{}")
    rc, err = cli(tmp_path / "root", "--cases", str(tmp_path / "cases.json"), "--generate-traces")
    assert_refused(tmp_path / "root", rc, err, "--cases", "cases.json", "not a directory", "foofah, library")


@pytest.fixture
def empty_hub(tmp_path, monkeypatch):
    """An empty Hugging Face cache; the returned environment points every HF variable at it."""
    home = tmp_path / "hf_home"
    env = {"HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub"), "HF_HUB_OFFLINE": "1"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(home / "hub"))
    return env


def test_uncached_hub_model_offline_fails_at_once_naming_the_cache(tmp_path, empty_hub):
    t = time.monotonic()
    rc, err = cli(tmp_path / "root", "--cases", "library", "--generate-traces", "--limit-total", "4",
                  "--backend", "hf", "--model", "SomeOrg/not-downloaded-1B", env=empty_hub)
    assert_refused(tmp_path / "root", rc, err, "--backend hf", "SomeOrg/not-downloaded-1B",
                   empty_hub["HF_HUB_CACHE"], "HF_HUB_OFFLINE")
    assert time.monotonic() - t < 60  # the interpreter's start on a busy machine; no network retries


def test_no_network_counts_as_offline(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    t = time.monotonic()
    reason = hub_offline_reason(timeout_s=2.0)
    assert reason and "127.0.0.1:9" in reason and time.monotonic() - t < 5


def _fake_cached_model(hub: Path, repo: str) -> None:
    """The layout huggingface_hub writes: refs/main names a snapshot holding the files."""
    d = hub / f"models--{repo.replace('/', '--')}"
    (d / "refs").mkdir(parents=True)
    (d / "refs" / "main").write_text("0" * 40)
    snap = d / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")


def test_cached_model_local_folder_and_packaged_name_pass_offline(tmp_path, empty_hub):
    _fake_cached_model(Path(empty_hub["HF_HUB_CACHE"]), "SomeOrg/cached-1B")
    check_hub_model("SomeOrg/cached-1B")
    (tmp_path / "folder").mkdir()
    check_hub_model(str(tmp_path / "folder"))
    check_hub_model("smollm2")
    check_hub_model(None)
    with pytest.raises(ModelNotInstalled, match=r"SomeOrg/other-1B.*hf_home/hub.*HF_HUB_OFFLINE"):
        check_hub_model("SomeOrg/other-1B")
    with pytest.raises(ModelNotInstalled, match="no such folder"):
        check_hub_model(str(tmp_path / "missing" / "model"))
