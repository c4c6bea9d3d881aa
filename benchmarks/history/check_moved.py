"""Check that the history files hold every line of the old diary.

The old `benchmarks/RESULTS.md` (at COMMIT, the last commit before the move) was split into
the files of this folder. Every non-empty line of it must be here, as often as it was there
(a multiset), apart from the headings that were renamed; those are listed in each file's
"Old headings" table, and this script checks them against it.

    python benchmarks/history/check_moved.py [COMMIT]

Exit 0 when nothing is missing; 1 with the missing lines otherwise.
"""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
COMMIT = "35c72ffba21e2b3da353f8089e638a8763fc3f47"


def _old_headings() -> set[str]:
    """Old heading texts (without the leading #s) from every file's "Old headings" table."""
    old = set()
    for path in HERE.glob("*.md"):
        rows = path.read_text().split("## Old headings", 1)
        if len(rows) < 2:
            continue
        for line in rows[1].splitlines():
            if line.startswith("| ") and not line.startswith("| old heading") and "---" not in line:
                old.add(line[2:].split(" | ", 1)[0].replace("\\|", "|").strip())
    return old


def main(argv: list[str]) -> int:
    commit = argv[0] if argv else COMMIT
    text = subprocess.run(
        ["git", "show", f"{commit}:benchmarks/RESULTS.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    need = collections.Counter(line for line in text.splitlines() if line.strip())
    have = collections.Counter()
    for path in HERE.glob("*.md"):
        have.update(line for line in path.read_text().splitlines() if line.strip())
    renamed = _old_headings()
    missing = need - have
    unexplained = {
        line: n for line, n in missing.items() if line.lstrip("#").strip() not in renamed
    }
    print(
        f"{sum(need.values())} non-empty lines in the old diary; "
        f"{sum(missing.values())} not found as they were, all renamed headings: "
        f"{not unexplained}"
    )
    for line, n in unexplained.items():
        print(f"missing x{n}: {line}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
