"""The module maps in docs/runtime.md and docs/architecture.md list exactly the modules that exist."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _generator():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_module_map", REPO / "scripts" / "gen_module_map.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_module_maps_are_current() -> None:
    result = subprocess.run([sys.executable, "scripts/gen_module_map.py", "--check"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_a_map_names_every_module_with_its_docstring(tmp_path: Path) -> None:
    gen = _generator()
    block = gen.module_map("runtime")
    for path in sorted((REPO / "runtime").rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py") or "__pycache__" in path.parts:
            continue
        assert f" {path.name} " in block or block.rstrip("`\n").endswith(path.name), path
    assert "The runtime's one door into the compiler" in block


def test_a_stale_map_is_rewritten_and_the_rest_kept() -> None:
    gen = _generator()
    text = "intro\n<!-- module-map: cli -->\nold lines\n<!-- /module-map -->\noutro\n"
    fresh = gen.refresh(text)
    assert fresh.startswith("intro\n<!-- module-map: cli -->\n```\ncli/") and fresh.endswith("<!-- /module-map -->\noutro\n")
    assert "old lines" not in fresh and "common.py" in fresh
