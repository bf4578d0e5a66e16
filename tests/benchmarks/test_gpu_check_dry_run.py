"""benchmarks/gpu/check.sh in its CPU dry run, as the GPU machine would run it: a clean venv that holds
only what the GPU image has (torch, transformers 5.17, peft, accelerate, scikit-learn, matplotlib
and their dependencies), the carried wheel set built for this interpreter by build_wheels.sh from
the same list and installed by check.sh with no index, then every stage at tiny sizes. A package
the toolkit needs and neither the image nor the list holds fails here, not on the GPU machine.

The venv's packages come through pip as configured on this machine (a local file index here, so
nothing is downloaded when it is present); the wheel set is built for this interpreter (the GPU
machine's is Python 3.12; the list and the packing are the same). Slow: the venv, the xz packing
of pyarrow and pandas, and every stage on 2 cores took 22 minutes (2026-12-04, a shared machine).
"""
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# what the GPU image holds (the list): everything else must come from the carried wheels
IMAGE = ["torch", "transformers==5.17.0", "peft", "accelerate", "scikit-learn", "matplotlib"]


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_check_runs_from_a_clean_venv_with_the_carried_wheels(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=False)
    py = str(env_dir / "bin" / "python")
    import torch

    # this environment's torch build (a CPU wheel here): a bare `torch` would pull the CUDA build
    image = [f"torch=={torch.__version__}", *IMAGE[1:]]
    subprocess.run([py, "-m", "pip", "install", "--quiet", *image], check=True, timeout=1200)
    assert subprocess.run([py, "-c", "import trl"], capture_output=True).returncode != 0  # the image lacks it
    wheels = tmp_path / "wheels"
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run(["bash", str(REPO / "benchmarks" / "gpu" / "build_wheels.sh"), "--python-version", ver,
                    "--out", str(wheels)], check=True, timeout=1200, env={**os.environ, "PYTHON": py})
    out = tmp_path / "out"
    r = subprocess.run(["bash", str(REPO / "benchmarks" / "gpu" / "check.sh")], capture_output=True, text=True,
                       timeout=2700, env={**os.environ, "DRY_RUN": "1", "PYTHON": py, "OUT": str(out),
                                          "WHEELS": str(wheels / "carried.tar.xz"),
                                          "CHECK_WORK": str(tmp_path / "work")})
    log = (out / "check.log").read_text()
    assert r.returncode == 0, log[-6000:]
    assert "vllm: not attempted" in log and "install: the carried wheels are installed" in log, log[:3000]
    for m in ("trl", "datasets", "jsonschema", "gguf", "statsmodels"):
        assert f"import {m}: ok" in log, log[:3000]
    result = json.loads((out / "check.json").read_text())
    stages = [k for k, v in result.items() if isinstance(v, dict)]
    assert stages == ["env", "hf_tiny", "build_4b", "hf_4b", "export", "sft_tiny", "sft_4b", "lora_4b", "sandbox"]
    assert all(result[s]["ok"] for s in stages), {s: result[s].get("error") for s in stages}
    assert result["env"]["versions"]["transformers"] == "5.17.0" and result["env"]["versions"]["vllm"] is None
    for s in ("hf_tiny", "hf_4b"):
        one, batched = result[s]["rows"]
        assert one["tokens"] > 0 and batched["prompts"] > one["prompts"] and batched["tokens_per_s"] > 0
    assert result["sft_4b"]["steps"] == 2 and result["lora_4b"]["steps"] == 3
    assert result["sandbox"]["runs_per_s"] > 0 and result["sandbox"]["mismatches"] == 0
    assert result["summary"][-1] == "stages failed: none"


def test_the_stages_fit_the_machines_minutes():
    """The stages' limits leave a minute for the install within 8 minutes, and check.sh never gives
    check.py more than what is left of 560 s (the machine stops a command at 600)."""
    sys.path.insert(0, str(REPO / "benchmarks" / "gpu"))
    from check import STAGES

    assert sum(s.gpu_s for s in STAGES) <= 420
    text = (REPO / "benchmarks" / "gpu" / "check.sh").read_text()
    assert "LEFT=$(( 560 - ($(date +%s) - START) ))" in text and "vllm: not attempted" in text
    assert "pip install" in text and "--no-index" in text
