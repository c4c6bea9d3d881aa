"""Old name of ``rlsuite bench report`` (``make results``), kept for one release.

python benchmarks/summary.py [--check]
"""

import sys

from rlsuite.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "report", *sys.argv[1:]]))
