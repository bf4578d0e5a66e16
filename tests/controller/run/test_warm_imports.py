"""A tracing run imports what the controllers need in a niced thread: everything is imported once
the thread ends, and only that thread was niced, not the run's main thread."""
import json
import subprocess
import sys

SCRIPT = r"""
import json, os, sys
import controller.pipeline
from controller.warm import WARM_MODULES, warm_imports
before = [m for m in WARM_MODULES + ("matplotlib.pyplot",) if m in sys.modules]
main_nice = os.getpriority(os.PRIO_PROCESS, 0)
warm_imports(7).join()
print(json.dumps({"before": before, "missing": [m for m in WARM_MODULES + ("matplotlib.pyplot",) if m not in sys.modules],
                  "main_nice": [main_nice, os.getpriority(os.PRIO_PROCESS, 0)]}))
"""


def test_warm_imports_load_the_controller_modules_in_a_niced_thread_only():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"] == []  # importing the pipeline does not import them
    assert got["missing"] == []
    assert got["main_nice"][0] == got["main_nice"][1]  # the main thread kept its priority
