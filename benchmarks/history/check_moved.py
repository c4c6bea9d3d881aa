"""Check that the history files hold every line moved out of `benchmarks/RESULTS.md`.

The page was cut twice, and each cut moved its text here:

1. At `35c72ff` the whole diary was split into the files of this folder. Every non-empty
   line of it must be here, as often as it was there (a multiset), apart from the headings
   that were renamed; those are listed in each file's "Old headings" table, and this script
   checks them against it.
2. At `e06c5e1` the page became the generated table and one short section per app; each
   app's old section was appended, unchanged, to that app's file (the tests to
   `project.md`, the preamble to `README.md`). Every non-empty line of that page outside the
   generated table must be here or on the current page (the section headings are). The
   table's lines are not checked: `rlsuite bench report` regenerates them from the
   results JSON.

The results files moved into one folder per app afterwards (`results/traffic_x.json` is
`results/traffic/traffic_x.json`), and their paths here with them; the old pages are read
with their paths moved the same way.

    python benchmarks/history/check_moved.py [COMMIT]

With COMMIT, only that commit's page is checked, the first way. Exit 0 when nothing is
missing; 1 with the missing lines otherwise.
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PAGE = ROOT / "benchmarks" / "RESULTS.md"
COMMIT = "35c72ffba21e2b3da353f8089e638a8763fc3f47"
"""The first cut: the whole diary moved here."""
CUT = "e06c5e1"
"""The second cut: the sections below the generated table moved here."""
BEGIN = "<!-- summary:begin"
END = "<!-- summary:end -->"


def _old_headings() -> set[str]:
    """Old heading texts (without the leading #s) from every file's "Old headings" table."""
    old = set()
    for path in HERE.glob("*.md"):
        parts = path.read_text().split("## Old headings", 1)
        if len(parts) < 2:
            continue
        for line in parts[1].splitlines()[1:]:
            if line.startswith("#"):
                break  # the table ends where the next section starts
            if line.startswith("| ") and not line.startswith("| old heading") and "---" not in line:
                old.add(line[2:].split(" | ", 1)[0].replace("\\|", "|").strip())
    return old


GROUPED = (
    (re.compile(r"(^|[^a-z_/])((?:benchmarks/)?results/)(platform|traffic|queryopt|hierarchy)_"),
     r"\1\2\3/\3_"),
    (re.compile(r"(^|[^a-z_/])((?:benchmarks/)?results/)ring_"), r"\1\2traffic/ring_"),
    (re.compile(r"(^|[^a-z_/])((?:benchmarks/)?results/)device/"), r"\1\2platform/device/"),
)  # fmt: skip
"""Each results path's move into its app's folder: pattern, replacement."""


def _grouped(text: str) -> str:
    for pattern, replacement in GROUPED:
        text = pattern.sub(replacement, text)
    return text


def _page(commit: str) -> str:
    return _grouped(_page_as_committed(commit))


def _page_as_committed(commit: str) -> str:
    return subprocess.run(
        ["git", "show", f"{commit}:benchmarks/RESULTS.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _counts(lines) -> collections.Counter:
    return collections.Counter(line for line in lines if line.strip())


def _history() -> collections.Counter:
    have = collections.Counter()
    for path in HERE.glob("*.md"):
        have.update(_counts(path.read_text().splitlines()))
    return have


def _without_table(text: str) -> list[str]:
    lines = text.splitlines()
    begin = next(i for i, line in enumerate(lines) if line.startswith(BEGIN))
    end = lines.index(END)
    return lines[:begin] + lines[end + 1 :]


def _report(what: str, need: collections.Counter, missing: dict[str, int]) -> int:
    print(f"{what}: {sum(need.values())} non-empty lines; missing: {sum(missing.values())}")
    for line, n in missing.items():
        print(f"missing x{n}: {line}")
    return 1 if missing else 0


def check_first_cut(commit: str = COMMIT) -> int:
    need = _counts(_page(commit).splitlines())
    renamed = _old_headings()
    missing = need - _history()
    unexplained = {
        line: n for line, n in missing.items() if line.lstrip("#").strip() not in renamed
    }
    return _report(f"the diary at {commit[:7]} (renamed headings allowed)", need, unexplained)


def check_second_cut(commit: str = CUT) -> int:
    need = _counts(_without_table(_page(commit)))
    have = _history() + _counts(PAGE.read_text().splitlines())
    return _report(f"the page at {commit[:7]} outside its table", need, dict(need - have))


def main(argv: list[str]) -> int:
    if argv:
        return check_first_cut(argv[0])
    return max(check_first_cut(), check_second_cut())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
