#!/usr/bin/env python3
"""Write the module maps of docs/runtime.md and docs/architecture.md from the source tree.

Each map lists a package's modules and subpackages with the first sentence of their docstring, so
the docs name exactly the modules that exist and say what each one is for in the module's own
words. A map sits between ``<!-- module-map: FOLDER -->`` and ``<!-- /module-map -->`` markers;
everything outside the markers is left alone. ``--check`` exits 1 when a map is stale (a test
runs it), without ``--check`` the maps are rewritten.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = ("docs/runtime.md", "docs/architecture.md")
_MAP = re.compile(r"(<!-- module-map: (?P<folder>[\w/]+) -->\n)(?P<body>.*?)(<!-- /module-map -->)", re.S)


def summary(path: Path) -> str:
    """The first sentence of a module's docstring ('' when it has none)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    paragraph = (ast.get_docstring(tree) or "").strip().split("\n\n")[0]
    text = " ".join(line.strip() for line in paragraph.splitlines())
    end = text.find(". ")
    return text[: end + 1] if end >= 0 else text


def _lines(folder: Path, depth: int) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    indent = "  " * depth
    for path in sorted(p for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py")):
        rows.append((f"{indent}{path.name}", summary(path)))
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").is_file()):
        rows.append((f"{indent}{sub.name}/", summary(sub / "__init__.py")))
        rows.extend(_lines(sub, depth + 1))
    return rows


def module_map(folder: str) -> str:
    """The fenced block listing ``folder`` (relative to the checkout)."""
    root = REPO / folder
    rows = [(f"{folder.rstrip('/')}/", summary(root / "__init__.py") if (root / "__init__.py").is_file() else "")]
    rows += [(f"  {name}", text) for name, text in _lines(root, 0)]
    width = max(len(name) for name, _ in rows) + 2
    body = "\n".join(f"{name:<{width}}{text}".rstrip() for name, text in rows)
    return f"```\n{body}\n```\n"


def refresh(text: str) -> str:
    return _MAP.sub(lambda m: m.group(1) + module_map(m.group("folder")) + m.group(4), text)


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    stale = []
    for doc in DOCS:
        path = REPO / doc
        text = path.read_text(encoding="utf-8")
        fresh = refresh(text)
        if fresh != text:
            stale.append(doc)
            if not check:
                path.write_text(fresh, encoding="utf-8")
    if check and stale:
        print(f"stale module map in {', '.join(stale)}: run python scripts/gen_module_map.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
