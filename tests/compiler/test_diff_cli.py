"""`certification diff`: matching rules, the three input forms (files, directories, --git) and exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler.diff import diff_renders

REPO = Path(__file__).resolve().parents[2]
GOLDEN_DIFF = REPO / "golden" / "diff"
GIT = shutil.which("git")


def nvcrectl(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nvcre.cli.main", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def obj(name: str, spec: dict, **labels: str) -> dict:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Workflow", "metadata": {"name": name, "labels": labels}, "spec": spec}


CATEGORY = {
    "nvcre.nvidia.com/certification": "c",
    "nvcre.nvidia.com/category-domain": "communication",
    "nvcre.nvidia.com/category-variant": "nccl-all-reduce",
}


# --- matching (pure) ----------------------------------------------------------------------------


def test_equal_renders_have_no_changes() -> None:
    docs = [obj("a", {"x": [1, 2]})]
    assert diff_renders(docs, [dict(d) for d in docs]).equal


def test_named_items_are_compared_by_name_and_a_new_order_is_reported() -> None:
    old = [obj("a", {"containers": [{"name": "x", "image": "i:1"}, {"name": "y", "image": "j:1"}]})]
    new = [obj("a", {"containers": [{"name": "y", "image": "j:1"}, {"name": "x", "image": "i:2"}, {"name": "z", "image": "k"}]})]
    (change,) = diff_renders(old, new).objects
    by_path = {f.path: f for f in change.fields}
    assert by_path["spec.containers[name=x].image"].old == "i:1"
    assert by_path["spec.containers[name=z]"].change == "added"
    assert by_path["spec.containers"].change == "reordered"
    assert by_path["spec.containers"].new == ["[name=y]", "[name=x]", "[name=z]"]


def test_a_list_of_plain_values_is_one_change() -> None:
    old = [obj("a", {"args": ["-x", "A=1", "run"]})]
    new = [obj("a", {"args": ["-x", "A=1", "-x", "B=2", "run"]})]
    (field,) = diff_renders(old, new).objects[0].fields
    assert (field.path, field.old, field.new) == ("spec.args", old[0]["spec"]["args"], new[0]["spec"]["args"])


def test_a_new_name_in_the_same_category_is_a_rename_with_its_field_changes() -> None:
    old = [obj("c-communication-nccl-a-1111", {"n": 2}, **CATEGORY)]
    new = [obj("c-communication-nccl-a-2222", {"n": 4}, **CATEGORY)]
    (change,) = diff_renders(old, new).objects
    assert (change.status, change.old_name, change.category) == ("renamed", "c-communication-nccl-a-1111", "communication/nccl-all-reduce")
    assert [f.path for f in change.fields] == ["spec.n"]


def test_objects_only_one_side_has_are_added_or_removed() -> None:
    result = diff_renders([obj("gone", {})], [obj("new", {})])
    assert [(o.name, o.status) for o in result.objects] == [("new", "added"), ("gone", "removed")]


def test_repeated_names_pair_up_in_order() -> None:
    old = [obj("same", {"host": "a"}), obj("same", {"host": "b"})]
    new = [obj("same", {"host": "a"}), obj("same", {"host": "c"})]
    (change,) = diff_renders(old, new).objects
    assert [(f.path, f.old, f.new) for f in change.fields] == [("spec.host", "b", "c")]


def test_booleans_and_numbers_are_not_confused() -> None:
    (change,) = diff_renders([obj("a", {"v": True, "w": 1})], [obj("a", {"v": 1, "w": 1.0})]).objects
    assert sorted(f.path for f in change.fields) == ["spec.v", "spec.w"]


# --- the command --------------------------------------------------------------------------------


def test_exit_codes_equal_different_and_bad_input(tmp_path: Path) -> None:
    case = GOLDEN_DIFF / "options-and-categories"
    same = nvcrectl("certification", "diff", str(case / "old.yaml"), str(case / "old.yaml"))
    assert (same.returncode, same.stdout) == (0, "no differences\n")
    assert nvcrectl("certification", "diff", str(case / "old.yaml"), str(case / "new.yaml")).returncode == 1
    (tmp_path / "bad.yaml").write_text("a: [\n")
    bad = nvcrectl("certification", "diff", str(case / "old.yaml"), str(tmp_path / "bad.yaml"))
    assert bad.returncode == 2 and bad.stdout == "" and "bad.yaml" in bad.stderr and "Traceback" not in bad.stderr
    missing = nvcrectl("certification", "diff", str(case / "old.yaml"), str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "nope.yaml: no such file" in missing.stderr
    assert nvcrectl("certification", "diff", str(case / "old.yaml")).returncode == 2


def test_json_input_and_directories_compare_like_streams(tmp_path: Path) -> None:
    case = GOLDEN_DIFF / "options-and-categories"
    cert = REPO / "examples" / "certification.yaml"
    as_json = tmp_path / "render.json"
    as_json.write_text(nvcrectl("certification", "render", str(cert), "--gpu-arch", "gb300", "-o", "json").stdout)
    as_dir = tmp_path / "dir"
    assert nvcrectl("certification", "render", str(cert), "--gpu-arch", "gb300", "--output-dir", str(as_dir)).returncode == 0
    same = nvcrectl("certification", "diff", str(as_json), str(as_dir))
    assert same.returncode == 0, same.stdout + same.stderr
    different = nvcrectl("certification", "diff", str(case / "new.yaml"), str(as_dir), "-o", "json")
    assert different.returncode == 1
    assert json.loads(different.stdout)["equal"] is False


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if GIT is None:
        pytest.skip("git is not installed")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }

    def git(*args: str) -> None:
        subprocess.run([GIT, *args], cwd=tmp_path, env=env, check=True, capture_output=True, timeout=60)

    case = GOLDEN_DIFF / "options-and-categories"
    git("init", "-q")
    (tmp_path / "renders").mkdir()
    shutil.copy(case / "old.yaml", tmp_path / "renders" / "lab.yaml")
    cert = REPO / "examples" / "certification.yaml"
    assert (
        nvcrectl(
            "certification", "render", str(cert), "--gpu-arch", "gb300", "--output-dir", str(tmp_path / "renders" / "gb300")
        ).returncode
        == 0
    )
    git("add", ".")
    git("commit", "-q", "-m", "renders")
    shutil.copy(case / "new.yaml", tmp_path / "renders" / "lab.yaml")
    return tmp_path


def test_git_compares_a_file_with_its_committed_version(repo: Path) -> None:
    result = nvcrectl("certification", "diff", "--git", "HEAD", "lab.yaml", cwd=repo / "renders")
    assert result.returncode == 1, result.stderr
    case = GOLDEN_DIFF / "options-and-categories"
    assert result.stdout == (case / "expected.txt").read_text()


def test_git_compares_a_render_directory_and_handles_new_paths(repo: Path) -> None:
    same = nvcrectl("certification", "diff", "--git", "HEAD", "renders/gb300", cwd=repo)
    assert same.returncode == 0, same.stdout + same.stderr
    shutil.copytree(repo / "renders" / "gb300", repo / "renders" / "fresh")
    fresh = nvcrectl("certification", "diff", "--git", "HEAD", "renders/fresh", "-o", "json", cwd=repo)
    assert fresh.returncode == 1
    assert {o["status"] for o in json.loads(fresh.stdout)["objects"]} == {"added"}


def test_git_reports_a_deleted_render_directory_as_removed(repo: Path) -> None:
    shutil.rmtree(repo / "renders" / "gb300")
    result = nvcrectl("certification", "diff", "--git", "HEAD", "renders/gb300", "-o", "json", cwd=repo)
    assert result.returncode == 1, result.stderr
    objects = json.loads(result.stdout)["objects"]
    assert len(objects) == 4 and {o["status"] for o in objects} == {"removed"}


@pytest.mark.parametrize("revision", ["--output=/tmp/x", "no-such-branch", "HEAD;rm"])
def test_git_refuses_bad_revisions(repo: Path, revision: str) -> None:
    result = nvcrectl("certification", "diff", f"--git={revision}", "renders/lab.yaml", cwd=repo)
    assert result.returncode == 2 and "--git" in result.stderr and result.stdout == ""
