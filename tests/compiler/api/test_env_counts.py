"""Training counts: validate and render refuse the same values at the path the user wrote them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler.api.validate import validate

BAD = "a[$(id)]"


def certification(spec_env: list[dict], category_env: list[dict] | None = None) -> dict:
    category: dict = {"domain": "training", "variant": "nemotron5-8b"}
    if category_env is not None:
        category["options"] = {"env": category_env}
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "counts"},
        "spec": {
            "target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
            "env": spec_env,
            "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}, category],
        },
    }


def cli(command: str, document: dict, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "cert.yaml"
    path.write_text(json.dumps(document))
    extra = ["--platform", "onprem", "--gpu-arch", "h100"] if command == "render" else []
    return subprocess.run(
        [sys.executable, "-m", "nvcre.cli.main", "certification", command, str(path), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("document", "path"),
    [
        (certification([{"name": "PATH_HINT", "value": "x"}, {"name": "MICRO_BATCH_SIZE", "value": BAD}]), "spec.env[1].value"),
        (certification([], [{"name": "GLOBAL_BATCH_SIZE", "value": "12a"}]), "spec.categories[1].options.env[0].value"),
        (
            certification([{"name": "SEQ_LENGTH", "value": "x"}], [{"name": "SEQ_LENGTH", "value": "-1"}]),
            "spec.categories[1].options.env[0].value",
        ),
    ],
)
def test_validate_and_render_name_the_entry_as_written(document: dict, path: str, tmp_path: Path) -> None:
    found = [d for d in validate(document) if d.code == "EnvValueInvalid"]
    assert [d.path for d in found] == [path]
    for command in ("validate", "render"):
        done = cli(command, document, tmp_path)
        assert done.returncode == 2 and done.stdout == ""
        assert f"error: {path}: " in done.stderr and "[EnvValueInvalid]" in done.stderr


def test_a_spec_wide_value_every_training_category_overrides_is_not_used() -> None:
    document = certification([{"name": "SEQ_LENGTH", "value": BAD}], [{"name": "SEQ_LENGTH", "value": "4096"}])
    assert not [d for d in validate(document) if d.code == "EnvValueInvalid"]


def test_counts_outside_training_categories_are_not_counts() -> None:
    document = certification([{"name": "MICRO_BATCH_SIZE", "value": BAD}])
    document["spec"]["categories"] = document["spec"]["categories"][:1]
    assert not [d for d in validate(document) if d.code == "EnvValueInvalid"]
