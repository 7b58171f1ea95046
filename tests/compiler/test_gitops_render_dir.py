"""`render --output-dir`: one file per object plus a kustomization that builds exactly the stdout render."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.gitops import KUSTOMIZATION, MARKER, object_file_name, owned_resources, plan_directory
from nvcre.compiler.yamlio import load_documents

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = [sys.executable, "-m", "nvcre.cli.main"]
EXAMPLE = REPO / "examples" / "certification.yaml"
FLAGS = ["--platform", "onprem", "--gpu-arch", "gb300"]
KUBECTL = shutil.which("kubectl")


def run(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*NVCRECTL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


def snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.iterdir())}


def workflow(name: str, **labels: str) -> dict:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Workflow", "metadata": {"name": name, "labels": labels}}


# --- planning (pure) ----------------------------------------------------------------------------


def test_plan_names_files_after_the_category_and_lists_them_in_render_order() -> None:
    docs = [
        workflow(
            "c-communication-nccl-a-1",
            **{
                "nvcre.nvidia.com/certification": "c",
                "nvcre.nvidia.com/category-domain": "communication",
                "nvcre.nvidia.com/category-variant": "nccl-all-reduce",
            },
        ),
        workflow("Odd_Name"),
    ]
    plan = plan_directory(docs)
    assert plan.resources == ("c-communication-nccl-all-reduce.yaml", "workflow-odd-name.yaml")
    assert list(plan.files) == [*plan.resources, KUSTOMIZATION]
    assert plan.files[KUSTOMIZATION].startswith(MARKER)
    assert owned_resources(plan.files[KUSTOMIZATION]) == plan.resources
    kustomization = load_documents(plan.files[KUSTOMIZATION])[0]
    assert kustomization["sortOptions"] == {"order": "fifo"}


def test_the_same_category_twice_falls_back_to_object_names() -> None:
    labels = {"nvcre.nvidia.com/certification": "c", "nvcre.nvidia.com/category-domain": "d", "nvcre.nvidia.com/category-variant": "v"}
    plan = plan_directory([workflow("c-d-v-aaaa", **labels), workflow("c-d-v-bbbb", **labels)])
    assert plan.resources == ("workflow-c-d-v-aaaa.yaml", "workflow-c-d-v-bbbb.yaml")


def test_plan_refuses_two_objects_with_one_file_name_and_nameless_objects() -> None:
    with pytest.raises(CompileError) as exc:
        plan_directory([workflow("a"), workflow("A")])
    assert exc.value.diagnostics[0].code == "DuplicateFileName"
    with pytest.raises(CompileError):
        object_file_name({"kind": "Workflow", "metadata": {}})


def test_owned_resources_ignores_paths_outside_the_directory() -> None:
    text = MARKER + "resources:\n- a.yaml\n- ../escape.yaml\n- sub/b.yaml\n- kustomization.yaml\n"
    assert owned_resources(text) == ("a.yaml",)


# --- the command --------------------------------------------------------------------------------


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_kustomize_builds_exactly_the_stdout_render(tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    result = run("certification", "render", str(EXAMPLE), *FLAGS, "--output-dir", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "5 file(s), 5 written" in result.stderr
    stdout_render = run("certification", "render", str(EXAMPLE), *FLAGS).stdout
    built = subprocess.run([KUBECTL, "kustomize", str(out)], capture_output=True, text=True, timeout=60, check=True)
    assert built.stdout == stdout_render


def test_re_rendering_unchanged_input_leaves_every_file_untouched(tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    assert run("certification", "render", str(EXAMPLE), *FLAGS, "--output-dir", str(out)).returncode == 0
    before = snapshot(out)
    again = run("certification", "render", str(EXAMPLE), *FLAGS, "--output-dir", str(out))
    assert again.returncode == 0, again.stderr
    assert "0 written, 5 unchanged, 0 stale removed" in again.stderr
    assert snapshot(out) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left behind


def test_stale_files_of_an_earlier_render_go_and_other_files_stay(tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    assert run("certification", "render", str(EXAMPLE), *FLAGS, "--output-dir", str(out)).returncode == 0
    (out / "README.md").write_text("kept\n")
    smaller = tmp_path / "cert.yaml"
    text = EXAMPLE.read_text()
    smaller.write_text(text[: text.index("  - domain: communication\n    variant: nccl-alltoall")])
    result = run("certification", "render", str(smaller), *FLAGS, "--output-dir", str(out))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "gb300-burn-in-communication-nccl-all-reduce.yaml", KUSTOMIZATION]
    assert (out / "README.md").read_text() == "kept\n"


def test_a_failing_render_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    bad = tmp_path / "bad.yaml"
    bad.write_text(EXAMPLE.read_text().replace("variant: dcgm-level4", "variant: no-such-variant"))
    result = run("certification", "render", str(bad), *FLAGS, "--output-dir", str(out))
    assert result.returncode == 2
    assert "spec.categories[2]" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [bad]
    # and an existing render stays as it was
    assert run("certification", "render", str(EXAMPLE), *FLAGS, "--output-dir", str(out)).returncode == 0
    before = snapshot(out)
    assert run("certification", "render", str(bad), *FLAGS, "--output-dir", str(out)).returncode == 2
    assert snapshot(out) == before


def test_a_kustomization_it_did_not_write_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    out.mkdir()
    (out / KUSTOMIZATION).write_text("resources: [mine.yaml]\n")
    result = run("certification", "render", str(EXAMPLE), *FLAGS, "--output-dir", str(out))
    assert result.returncode == 2
    assert "--output-dir" in result.stderr and "not written by nvcrectl" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == [KUSTOMIZATION]


def test_a_foreign_file_with_a_planned_name_is_not_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    out.mkdir()
    clash = out / "gb300-burn-in-diagnostics-dcgm-level4.yaml"
    clash.write_text("mine\n")
    result = run("certification", "render", str(EXAMPLE), *FLAGS, "--output-dir", str(out))
    assert result.returncode == 2
    assert "refusing to overwrite" in result.stderr
    assert clash.read_text() == "mine\n" and sorted(p.name for p in out.iterdir()) == [clash.name]


def test_json_output_and_output_dir_do_not_combine(tmp_path: Path) -> None:
    result = run("certification", "render", str(EXAMPLE), *FLAGS, "-o", "json", "--output-dir", str(tmp_path / "x"))
    assert result.returncode == 2 and "--output" in result.stderr
    assert not (tmp_path / "x").exists()


def test_a_directory_renders_every_certification_in_path_order(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(EXAMPLE.read_text())
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "small.yaml").write_text(
        (REPO / "golden/render/aws-h100-all-reduce/certification.yaml").read_text()
        + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ignored\n"
    )
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "list.yml").write_text("- a\n- b\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c.yaml").write_text(EXAMPLE.read_text().replace("gb300-burn-in", "hidden"))
    result = run("certification", "render", str(tmp_path), *FLAGS)
    assert result.returncode == 0, result.stderr
    names = [d["metadata"]["name"] for d in load_documents(result.stdout)]
    assert len(names) == 5
    assert names[0].startswith("cert-") and all(n.startswith("gb300-burn-in-") for n in names[1:])


def test_directory_errors_name_the_file_and_the_field(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text(EXAMPLE.read_text().replace("variant: dcgm-level4", "variant: nope"))
    (tmp_path / "two.yaml").write_text(EXAMPLE.read_text().replace("gb300-burn-in", "second"))
    result = run("certification", "render", str(tmp_path), *FLAGS)
    assert result.returncode == 2 and result.stdout == ""
    assert "one.yaml: spec.categories[2]" in result.stderr
    (tmp_path / "one.yaml").write_text("a: [\n")
    broken = run("certification", "render", str(tmp_path), *FLAGS)
    assert broken.returncode == 2 and "one.yaml:2" in broken.stderr and "Traceback" not in broken.stderr


def test_env_prefix_fills_unset_flags_and_explicit_flags_win(tmp_path: Path) -> None:
    env = {"X_NVCRE_PLATFORM": "aws", "X_NVCRE_GPU_ARCH": "h100"}
    cert = str(REPO / "golden/render/aws-h100-all-reduce/certification.yaml")
    expected = (REPO / "golden/render/aws-h100-all-reduce/expected.yaml").read_text()
    from_env = run("certification", "render", cert, "--env-prefix", "X_", env=env)
    assert from_env.returncode == 0, from_env.stderr
    assert load_documents(from_env.stdout) == load_documents(expected)
    overridden = run("certification", "render", cert, "--env-prefix", "X_", "--platform", "onprem", env=env)
    assert '"platform":{"source":"supplied","value":"onprem"}' in overridden.stdout
    ignored = run("certification", "render", cert, env=env)  # without the prefix flag the environment is not read
    assert ignored.returncode == 2


def test_plan_of_a_render_matches_the_stream_documents() -> None:
    from nvcre.compiler.render import render_certification

    doc = load_documents(EXAMPLE.read_text())[0]
    rendered = render_certification(doc, platform="onprem", gpu_arch="gb300")
    plan = plan_directory(rendered.workflows)
    assert "---\n".join(plan.files[name] for name in plan.resources) == dump_yaml_stream(rendered.workflows)
