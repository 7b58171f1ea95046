"""The CEL parser is built once per process: from the shipped tables, else from the grammar with
its tables kept on disk, safely and optionally."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler import cel

REPO = Path(__file__).resolve().parents[2]

_PROBE = (
    "import os; "
    "from nvcre.compiler import cel; "
    "cel.SHIPPED_TABLES = None if os.environ.get('PROBE_NO_SHIPPED') else cel.SHIPPED_TABLES; "
    "from nvcre.compiler.api.validate import validate; "
    "from nvcre.compiler.yamlio import load_file; "
    "(doc,) = load_file('examples/certification.yaml'); "
    "assert validate(doc) == []; "
    "assert cel.environment() is cel.environment(); "
    "print(cel.cache_file())"
)


def _probe(env: dict[str, str]) -> str:
    result = subprocess.run([sys.executable, "-c", _PROBE], cwd=REPO, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_without_shipped_tables_the_tables_are_written_once_and_reused(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "NVCRE_NO_CACHE": "", "PROBE_NO_SHIPPED": "1"}
    first = _probe(env)
    tables = Path(first)
    assert tables.parent == tmp_path / "nvcre" / "cel" and tables.is_file()
    assert oct(tables.parent.stat().st_mode & 0o777) == oct(0o700)
    written = tables.stat().st_mtime_ns
    assert _probe(env) == first
    assert tables.stat().st_mtime_ns == written  # read back, not rebuilt


def test_no_cache_turns_the_disk_cache_off(tmp_path: Path) -> None:
    for shipped in ("", "1"):
        env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "NVCRE_NO_CACHE": "1", "PROBE_NO_SHIPPED": shipped}
        assert _probe(env) == "None"
        assert not (tmp_path / "nvcre").exists()


def test_with_the_shipped_tables_nothing_is_built_or_written(tmp_path: Path) -> None:
    """The shipped tables are read as they are: no disk cache file appears even when allowed."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "NVCRE_NO_CACHE": ""}
    path = Path(_probe(env))
    assert not path.exists()


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="needs POSIX file ownership")
def test_a_directory_others_can_write_is_never_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "nvcre" / "cel"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("NVCRE_NO_CACHE", raising=False)
    assert cel.cache_file() is None
    shared.chmod(0o700)
    assert cel.cache_file() == shared / cel.cache_file().name  # type: ignore[union-attr]


def test_compiled_programs_are_shared_by_text() -> None:
    assert cel.program("1 + 1 == 2") is cel.program("1 + 1 == 2")
    assert cel.evaluate_bool("x > 1", {"x": 2})
    with pytest.raises(cel.CELError):
        cel.evaluate_bool("x +", {"x": 2})
    with pytest.raises(cel.CELError):
        cel.evaluate_bool("x.missing == 1", {"x": {}})  # an evaluation error, not a crash
    with pytest.raises(cel.CELError):
        cel.to_cel(2**64)
