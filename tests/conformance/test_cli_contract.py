"""NVCRE's output flags, run through the installed ``nvcrectl`` as a user's script runs it.

``certification list-categories -o table|yaml|json`` and ``cluster info -o table|json|yaml``
take NVCRE's values (``table`` the default; ``text`` stays as our older name of it), and the
YAML and JSON forms carry the same data.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = shutil.which("nvcrectl", path=str(Path(sys.executable).parent)) or "nvcrectl"
FACTS = REPO / "tests" / "fixtures" / "facts" / "aws-h100-2nodes.yaml"


def nvcrectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([NVCRECTL, *args], cwd=REPO, capture_output=True, text=True, timeout=120, check=False)


def test_list_categories_speaks_table_yaml_and_json() -> None:
    table, text, as_yaml, as_json = (
        nvcrectl("certification", "list-categories", *flag) for flag in ([], ["-o", "text"], ["-o", "yaml"], ["-o", "json"])
    )
    assert {p.returncode for p in (table, text, as_yaml, as_json)} == {0}
    assert table.stdout == text.stdout and table.stdout.startswith("DOMAIN")
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)
    assert {(c["domain"], c["variant"]) for c in json.loads(as_json.stdout)} >= {("communication", "nccl-all-reduce")}
    assert nvcrectl("certification", "list-categories", "-o", "bogus").returncode == 2


@pytest.mark.parametrize("flag", [[], ["-o", "table"]])
def test_cluster_info_table_is_the_default(flag: list[str]) -> None:
    done = nvcrectl("cluster", "info", "--facts", str(FACTS), *flag)
    assert done.returncode == 0, done.stderr
    assert "aws" in done.stdout and not done.stdout.lstrip().startswith("{")


def test_cluster_info_yaml_and_json_carry_the_same_summary() -> None:
    as_yaml = nvcrectl("cluster", "info", "--facts", str(FACTS), "-o", "yaml")
    as_json = nvcrectl("cluster", "info", "--facts", str(FACTS), "-o", "json")
    assert as_yaml.returncode == as_json.returncode == 0, as_yaml.stderr
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)
