"""The wheel carries every subpackage and the catalog, platform and CRD data the compiler reads."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_wheel_carries_code_and_data(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    wheel = next(tmp_path.glob("nvcre-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    expected_data = [
        *(
            f"nvcre/catalog/{p.relative_to(REPO / 'catalog')}"
            for p in (REPO / "catalog").rglob("*")
            if p.is_file() and p.suffix in {".yaml", ".j2", ".sh"}
        ),
        *(f"nvcre/platforms/{p.relative_to(REPO / 'platforms')}" for p in (REPO / "platforms").rglob("*.yaml")),
        *(f"nvcre/compiler/api/crds/{p.name}" for p in (REPO / "compiler/api/crds").glob("*.yaml")),
        "nvcre/compiler/cel_lalr.json",
        "nvcre/compiler/yaml_snapshot.jsonl",
        "nvcre/compiler/template_snapshot.json",
        "nvcre/compiler/install/dashboard.json",
        *(
            f"nvcre/testing/gobuild/{p.relative_to(REPO / 'testing/gobuild')}"
            for p in (REPO / "testing/gobuild/templates").rglob("*")
            if p.is_file()
        ),
    ]
    assert expected_data and not [n for n in expected_data if n not in names]
    # Every folder that is a package ships every module: a subpackage missing from
    # pyproject.toml's list would leave the installed command without it.
    packages = sorted(
        init.parent.relative_to(REPO) for root in ("compiler", "runtime", "cli", "testing") for init in (REPO / root).rglob("__init__.py")
    )
    assert len(packages) > 10
    for package in packages:
        for module in (REPO / package).glob("*.py"):
            assert f"nvcre/{package.as_posix()}/{module.name}" in names, module
    assert "nvcre/__init__.py" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "nvcrectl = nvcre.cli.main:run" in text and "kubectl-nvcre = nvcre.cli.main:run" in text
