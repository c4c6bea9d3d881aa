"""qopt-bench: not built yet (its issue, #4, is still open)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print(
        "qopt-bench is not built yet: the queryopt app's issue (#4) is still open.", file=sys.stderr
    )
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
