"""Regenerate docs/platforms.md from the overlay data (``--check`` fails when the page is stale)."""

from __future__ import annotations

import sys
from pathlib import Path

from nvcre.compiler.platform_table import render_platform_table

PAGE = Path(__file__).resolve().parent.parent / "docs" / "platforms.md"


def main() -> int:
    text = render_platform_table()
    if "--check" in sys.argv[1:]:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.name} is stale: run python scripts/gen_platform_table.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
