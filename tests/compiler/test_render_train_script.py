"""The rendered training script treats the user's environment as data, never as code.

The script is taken from a real render (the ConfigMap of training/nemotron5-8b) and run under
bash with hostile values, with ``torchrun`` replaced by a stub that records its argv. Nothing
here touches the network: the workspace is a temporary folder whose Megatron-LM dataset helpers
already exist, so the script goes straight to the launch.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.passes.merge_env import TRAIN_SCRIPT_COUNTS
from nvcre.compiler.render import render_certification

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")


def _cert(env: list[dict] | None = None) -> dict:
    options: dict = {"nodesPerJob": 1}
    if env is not None:
        options["env"] = env
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "cert"},
        "spec": {
            "target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
            "categories": [{"domain": "training", "variant": "nemotron5-8b", "options": options}],
        },
    }


def _rendered_script() -> str:
    workflow = render_certification(_cert(), platform="onprem", gpu_arch="h100").workflows[0]
    config = next(d for d in workflow["spec"]["dependencies"] if d["kind"] == "ConfigMap")
    return config["data"]["train.sh"]


@pytest.fixture()
def run_script(tmp_path: Path):
    script = _rendered_script()
    assert "\nworkspace=/mnt/workspace\n" in script
    workspace = tmp_path / "workspace"
    helpers = workspace / "megatron-lm" / "megatron" / "core" / "datasets"
    helpers.mkdir(parents=True)
    (helpers / "helpers_cpp.cpython-312-x86_64-linux-gnu.so").write_text("", encoding="utf-8")
    (tmp_path / "train.sh").write_text(script.replace("\nworkspace=/mnt/workspace\n", f"\nworkspace={workspace}\n"), encoding="utf-8")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    argv_file = tmp_path / "torchrun.argv"
    (stubs / "torchrun").write_text(f"#!/bin/sh\nprintf '%s\\0' \"$@\" > '{argv_file}'\n", encoding="utf-8")
    (stubs / "torchrun").chmod(0o755)
    # a file a glob in an unquoted value would expand to
    (tmp_path / "flash-decoy").write_text("", encoding="utf-8")

    def run(env: dict[str, str]) -> tuple[subprocess.CompletedProcess, list[str] | None]:
        argv_file.unlink(missing_ok=True)
        base = {
            "PATH": f"{stubs}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "PET_NNODES": "1",
            "PET_NPROC_PER_NODE": "8",
            "HOME": str(tmp_path),
        }
        done = subprocess.run(
            [BASH, str(tmp_path / "train.sh")], env={**base, **env}, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
        )
        argv = argv_file.read_text(encoding="utf-8").split("\0")[:-1] if argv_file.exists() else None
        return done, argv

    return run


def _after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_defaults_reach_torchrun(run_script):
    done, argv = run_script({})
    assert done.returncode == 0, done.stderr
    assert argv is not None
    assert _after(argv, "--micro-batch-size") == "1"
    assert _after(argv, "--global-batch-size") == "8"
    assert _after(argv, "--attention-backend") == "flash"


@pytest.mark.parametrize("name", sorted(TRAIN_SCRIPT_COUNTS))
@pytest.mark.parametrize("hostile", ["a[$(touch pwned)]", "1+1", "$(touch pwned)", "x", "-1", "1 2", " 1"])
def test_a_count_that_is_not_digits_stops_the_script_before_any_arithmetic(run_script, tmp_path, name, hostile):
    env = {name: hostile}
    if name.startswith("SAVE_"):
        env["ENABLE_CHECKPOINT"] = "true"
    done, argv = run_script(env)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"{name} must be a whole number" in done.stderr
    assert argv is None, "torchrun must not start"
    assert not (tmp_path / "pwned").exists(), "a value was run as a command"


def test_digit_counts_are_used_as_given(run_script):
    done, argv = run_script({"MICRO_BATCH_SIZE": "2", "SEQ_LENGTH": "2048", "TRAIN_ITERS": "30"})
    assert done.returncode == 0, done.stderr
    assert argv is not None
    assert _after(argv, "--micro-batch-size") == "2"
    assert _after(argv, "--global-batch-size") == "16"
    assert _after(argv, "--seq-length") == "2048"
    assert _after(argv, "--train-iters") == "30"


@pytest.mark.parametrize("hostile", ["flash *", "flash*", "auto --no-such-flag", "$(touch pwned)", "; touch pwned"])
def test_attention_backend_reaches_megatron_as_one_word(run_script, tmp_path, hostile):
    done, argv = run_script({"ATTENTION_BACKEND": hostile})
    assert done.returncode == 0, done.stderr
    assert argv is not None
    assert _after(argv, "--attention-backend") == hostile
    assert "--no-such-flag" not in argv
    assert not (tmp_path / "pwned").exists()


def test_the_script_checks_exactly_the_counts_the_renderer_checks():
    script = _rendered_script()
    checked = {line.split()[1] for line in script.splitlines() if line.strip().startswith("require_count ")}
    assert checked == set(TRAIN_SCRIPT_COUNTS)


@pytest.mark.parametrize("value", ["a[$(id)]", "8x", "", "٣"])
def test_render_refuses_a_non_digit_count_with_the_field_path(value):
    with pytest.raises(CompileError) as caught:
        render_certification(_cert([{"name": "MICRO_BATCH_SIZE", "value": value}]), platform="onprem", gpu_arch="h100")
    lines = [d.render() for d in caught.value.errors]
    expected = (
        "spec.categories[0].options.env[0].value: MICRO_BATCH_SIZE is a count the training script "
        "computes with; give decimal digits only [EnvValueInvalid]"
    )
    assert lines == [expected]
    assert value not in lines[0] or value == ""


def test_render_accepts_digit_counts_and_leaves_other_names_alone():
    env = [{"name": "MICRO_BATCH_SIZE", "value": "4"}, {"name": "ATTENTION_BACKEND", "value": "fused"}]
    workflow = render_certification(_cert(env), platform="onprem", gpu_arch="h100").workflows[0]
    trainer = workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]
    values = {e["name"]: e["value"] for e in trainer["env"]}
    assert values["MICRO_BATCH_SIZE"] == "4" and values["ATTENTION_BACKEND"] == "fused"
