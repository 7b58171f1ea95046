"""check-renders (the pre-commit hook and scripts/check_renders.py): stale committed renders fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler.yamlio import load_documents

REPO = Path(__file__).resolve().parents[2]
CHECK = [sys.executable, "-m", "nvcre.cli.gitops", "check-renders"]


def check(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*CHECK, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository with two sources: one rendered to a directory, one to a single stream file."""
    shutil.copy(REPO / "golden/render/aws-h100-all-reduce/certification.yaml", tmp_path / "aws.yaml")
    shutil.copy(REPO / "examples/certification.yaml", tmp_path / "gb300.yaml")
    (tmp_path / "nvcre-renders.yaml").write_text(
        "renders:\n"
        "- source: aws.yaml\n  outputDir: rendered/aws\n  platform: aws\n  gpuArch: h100\n"
        "- source: gb300.yaml\n  output: rendered/gb300.yaml\n  platform: onprem\n  gpuArch: gb300\n"
    )
    return tmp_path


def test_missing_then_fixed_then_current(project: Path) -> None:
    first = check(cwd=project)
    assert first.returncode == 1
    assert "rendered/aws/cert-communication-nccl-all-reduce.yaml: missing" in first.stderr
    assert "2 of 2 render(s) are stale" in first.stderr
    fixed = check("--fix", cwd=project)
    assert fixed.returncode == 0, fixed.stderr
    assert (project / "rendered/aws/kustomization.yaml").is_file()
    assert load_documents((project / "rendered/gb300.yaml").read_text())[0]["kind"] == "Workflow"
    current = check(cwd=project)
    assert current.returncode == 0 and "2 render(s) are current" in current.stderr


def test_an_edited_source_or_a_hand_edited_render_is_stale(project: Path) -> None:
    assert check("--fix", cwd=project).returncode == 0
    rendered = project / "rendered/aws/cert-communication-nccl-all-reduce.yaml"
    rendered.write_text(rendered.read_text().replace("iterations: 1", "iterations: 2"))
    edited = check(cwd=project)
    assert edited.returncode == 1 and f"{Path('rendered/aws') / rendered.name}: differs" in edited.stderr
    assert check("--fix", cwd=project).returncode == 0
    source = project / "gb300.yaml"
    source.write_text(source.read_text().replace("nodesPerJob: 2\n      env:", "nodesPerJob: 4\n      env:"))
    changed = check(cwd=project)
    assert changed.returncode == 1 and "rendered/gb300.yaml: differs" in changed.stderr


def test_a_file_the_source_no_longer_renders_is_stale(project: Path) -> None:
    assert check("--fix", cwd=project).returncode == 0
    source = project / "aws.yaml"
    source.write_text(source.read_text().replace("nccl-all-reduce", "nccl-loopback").replace("    options:\n      nodesPerJob: 2\n", ""))
    result = check(cwd=project)
    assert result.returncode == 1
    assert "cert-communication-nccl-all-reduce.yaml: stale" in result.stderr
    assert check("--fix", cwd=project).returncode == 0
    assert not (project / "rendered/aws/cert-communication-nccl-all-reduce.yaml").exists()


def test_config_errors_exit_2_with_field_paths(tmp_path: Path) -> None:
    (tmp_path / "nvcre-renders.yaml").write_text("renders:\n- source: a.yaml\n  platfrom: aws\n- outputDir: x\n  output: y\n- 3\n")
    result = check(cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    for path in ("renders[0].platfrom", "renders[0]: set exactly one", "renders[1].source", "renders[2]: expected a mapping"):
        assert path in result.stderr
    missing_source = tmp_path / "other.yaml"
    missing_source.write_text("renders:\n- source: nope.yaml\n  output: out.yaml\n")
    result = check("-c", str(missing_source), cwd=tmp_path)
    assert result.returncode == 2 and "nope.yaml: no such file" in result.stderr


def test_script_and_hook_run_the_same_check(project: Path) -> None:
    script = subprocess.run(
        [sys.executable, str(REPO / "scripts/check_renders.py"), "--config", "nvcre-renders.yaml"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert script.returncode == 1 and "2 of 2 render(s) are stale" in script.stderr
    hooks = load_documents((REPO / ".pre-commit-hooks.yaml").read_text())[0]
    (hook,) = hooks
    assert hook["id"] == "nvcre-check-renders" and hook["language"] == "python" and hook["pass_filenames"] is False
    assert hook["entry"].split() == ["python", "-m", "nvcre.cli.gitops", "check-renders"]


def test_github_actions_example_runs_the_diff_and_the_check() -> None:
    workflow = load_documents((REPO / "examples/github-actions/nvcre-render-review.yaml").read_text())[0]
    jobs = workflow["jobs"]
    assert "pull_request" in workflow["on"]  # quoted in the file: a YAML 1.1 reader takes a bare `on` for true
    assert jobs["render-diff"]["permissions"]["pull-requests"] == "write"
    scripts = "\n".join(step.get("run", "") for job in jobs.values() for step in job["steps"])
    assert "nvcrectl certification diff --git" in scripts and "-o markdown" in scripts
    assert "python -m nvcre.cli.gitops check-renders" in scripts
