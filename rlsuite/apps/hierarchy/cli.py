"""hier-train: not built yet (its issue, #6, is still open)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("hier-train is not built yet: the hierarchy app's issue (#6) is still open.", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
