#!/usr/bin/env python
"""The toolkit's command from a checkout: the same CLI as the installed ``live-tool-dagger``
(``controller/cli.py``). ``--help`` lists every flag with its default."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without install

from controller.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
