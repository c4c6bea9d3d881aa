"""traffic-train: not built yet (its issue, #3, is still open)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("traffic-train is not built yet: the traffic app's issue (#3) is still open.", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
