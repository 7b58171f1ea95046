"""The recorded evidence cases (``tests/fixtures/evidence/cases.py``), loaded once for every test that uses them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

CASES_FILE = Path(__file__).resolve().parent / "fixtures" / "evidence" / "cases.py"


def _load() -> ModuleType:
    loaded = sys.modules.get("evidence_cases")
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location("evidence_cases", CASES_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


cases = _load()
