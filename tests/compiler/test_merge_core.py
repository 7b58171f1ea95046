"""The compiler's small building blocks: names, merge, safe loading, templates, overlays, purity."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from nvcre.compiler.diagnostics import CompileError, format_path
from nvcre.compiler.merge import merge
from nvcre.compiler.naming import options_suffix, truncate_name, workflow_name
from nvcre.compiler.overlays import PatchError, apply_operation, load_overlays
from nvcre.compiler.templating import TemplateSet
from nvcre.compiler.yamlio import load_documents

# --- names ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "full, short",
    [
        ("oci-gb200-allentries-cert-communication-nccl-all-reduce", "oci-gb200-allentries-cert-93dd7"),
        ("oci-gb200-allentries-cert-training-nemotron5-8b-s50", "oci-gb200-allentries-cert-17f95"),
        ("nemotron5-certification-training-nemotron5", "nemotron5-certification-t-9b1bc"),
        ("aws-nc-h1-communication-nccl-all-reduce", "aws-nc-h1-communication-n-2ae48"),
        ("short-name", "short-name"),
    ],
)
def test_truncation_matches_the_reference_names(full: str, short: str) -> None:
    assert truncate_name(full) == short
    assert len(truncate_name(full)) <= 31


def test_options_suffix_order_and_absence() -> None:
    assert options_suffix(None) == ""
    assert options_suffix({"image": "x", "thresholds": {"a": "b"}}) == ""
    options = {
        "rdmaDeviceAccess": "hostPath",
        "gpusPerNode": 4,
        "exitDurationMins": 9,
        "maxSteps": 50,
        "enableCheckpoint": True,
        "testScale": "diagnose",
        "enableMNNVL": False,
        "nodesPerJob": 2,
    }
    assert options_suffix(options) == "-n2-nomnnvl-diagnose-ckpt-s50-e9-g4-hostrdma"
    assert options_suffix({"rdmaDeviceAccess": "devicePlugin", "enableCheckpoint": False}) == "-dprdma"
    assert workflow_name("c", "training", "nemotron5-8b", {"maxSteps": 50}) == "c-training-nemotron5-8b-s50"


# --- merge ----------------------------------------------------------------------------------------


def test_merge_maps_named_lists_and_deletion() -> None:
    base = {"a": {"x": 1, "y": 2}, "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}], "args": ["-a", "-b"]}
    patch = {"a": {"y": None, "z": 3}, "env": [{"name": "B", "value": "9"}, {"name": "C", "value": "3"}], "args": ["-c"]}
    before = copy.deepcopy(base)
    out = merge(base, patch)
    assert out == {
        "a": {"x": 1, "z": 3},
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "9"}, {"name": "C", "value": "3"}],
        "args": ["-c"],
    }
    assert base == before
    out["a"]["x"] = 100
    assert base["a"]["x"] == 1


def test_merge_objects_by_kind_and_name() -> None:
    base = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "1"}}]
    patch = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"j": "2"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}},
    ]
    out = merge(base, patch)
    assert out[0]["data"] == {"k": "1", "j": "2"} and out[1]["metadata"]["name"] == "b"


# --- loading --------------------------------------------------------------------------------------


def test_safe_loading_refuses_python_tags_and_duplicates() -> None:
    with pytest.raises(CompileError) as exc:
        load_documents("!!python/object/apply:os.system ['true']\n", "x.yaml")
    assert exc.value.diagnostics[0].code == "YAMLSyntax"
    with pytest.raises(CompileError):
        load_documents("a: 1\na: 2\n", "x.yaml")


def test_yaml_1_1_scalars_like_kubectl() -> None:
    assert load_documents("a: yes\nb: '0755'\nc: 0755\n") == [{"a": True, "b": "0755", "c": 493}]


def test_format_path() -> None:
    assert format_path(["spec", "categories", 2, "options", "env", 0, "valueFrom"]) == "spec.categories[2].options.env[0].valueFrom"


# --- templates ------------------------------------------------------------------------------------


def test_yaml_templates_cannot_be_broken_by_values(tmp_path: Path) -> None:
    (tmp_path / "t.yaml.j2").write_text("name: {{ value }}\nlist: {{ items }}\n")
    templates = TemplateSet(tmp_path)
    hostile = 'x"\n  injected: true\nother: {'
    assert templates.render_yaml("t.yaml.j2", {"value": hostile, "items": [1, "a"]}, "test") == {"name": hostile, "list": [1, "a"]}


def test_script_templates_quote_every_value(tmp_path: Path) -> None:
    (tmp_path / "s.sh.j2").write_text("git clone {{ repo }} && echo {{ n }}\n")
    text = TemplateSet(tmp_path).render_script("s.sh.j2", {"repo": "https://x/y.git; rm -rf /", "n": 3})
    assert text == "git clone 'https://x/y.git; rm -rf /' && echo 3\n"


def test_templates_are_strict_and_sandboxed(tmp_path: Path) -> None:
    (tmp_path / "u.yaml.j2").write_text("a: {{ missing }}\n")
    (tmp_path / "s.yaml.j2").write_text("a: {{ x.__class__.__mro__ }}\n")
    templates = TemplateSet(tmp_path)
    with pytest.raises(CompileError):
        templates.render_yaml("u.yaml.j2", {}, "test")
    with pytest.raises(CompileError):
        templates.render_yaml("s.yaml.j2", {"x": 1}, "test")


# --- overlays -------------------------------------------------------------------------------------


def _write_overlay(root: Path, text: str) -> None:
    (root / "p").mkdir(parents=True, exist_ok=True)
    (root / "p" / "o.yaml").write_text(text)
    (root / "p" / "o.patches.yaml.j2").write_text("[]\n")


def test_overlay_must_name_its_architectures(tmp_path: Path) -> None:
    _write_overlay(tmp_path, "name: o\nreason: r\nwhen: {platform: {in: [aws]}}\npatches: p/o.patches.yaml.j2\n")
    with pytest.raises(CompileError) as exc:
        load_overlays(str(tmp_path))
    assert "gpuArchitecture" in str(exc.value)


def test_overlay_names_are_unique(tmp_path: Path) -> None:
    _write_overlay(tmp_path, "name: o\nreason: r\nwhen: {allArchitectures: true}\npatches: p/o.patches.yaml.j2\n")
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "o.yaml").write_text("name: o\nreason: r\nwhen: {allArchitectures: true}\npatches: p/o.patches.yaml.j2\n")
    with pytest.raises(CompileError) as exc:
        load_overlays(str(tmp_path))
    assert "also used by" in str(exc.value)


def _workflow() -> dict:
    return {
        "spec": {
            "jobTemplate": {
                "spec": {
                    "workload": {
                        "trainJob": {
                            "runtimeRef": {"name": "r"},
                            "trainer": {"args": ["-N", "8", "-x", "NCCL_DEBUG=INFO", "/bin/test", "-b", "8"]},
                        }
                    }
                }
            },
            "dependencies": [
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainingRuntime",
                    "metadata": {"name": "r"},
                    "spec": {
                        "template": {
                            "spec": {
                                "replicatedJobs": [
                                    {
                                        "name": "node",
                                        "template": {"spec": {"template": {"spec": {"containers": [{"name": "node", "image": "i"}]}}}},
                                    }
                                ]
                            }
                        }
                    },
                }
            ],
        }
    }


def test_mpi_env_ownership_and_anchor() -> None:
    owners: dict[str, str] = {}
    wf = apply_operation(_workflow(), {"mpiEnv": [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "A", "value": "1"}]}, owners, "first")
    assert wf["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]["args"] == [
        "-N",
        "8",
        "-x",
        "NCCL_DEBUG=WARN",
        "-x",
        "A=1",
        "/bin/test",
        "-b",
        "8",
    ]
    with pytest.raises(PatchError, match="already forwarded by overlay first"):
        apply_operation(wf, {"mpiEnv": [{"name": "A", "value": "2"}]}, owners, "second")


def test_operations_never_guess() -> None:
    with pytest.raises(PatchError):
        apply_operation(_workflow(), {"replaceArgs": {"/bin/absent": "/bin/x"}}, {}, "o")
    with pytest.raises(PatchError):
        apply_operation(_workflow(), {"container": {"jobs": ["launcher"], "name": "node", "image": "x"}}, {}, "o")
    with pytest.raises(PatchError):
        apply_operation(_workflow(), {"container": {"name": "sidecar", "image": "x"}}, {}, "o")
    with pytest.raises(PatchError):
        apply_operation(_workflow(), {"bogus": {}}, {}, "o")
    out = apply_operation(_workflow(), {"container": {"name": "node", "image": "x"}}, {}, "o")
    pod = out["spec"]["dependencies"][0]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["containers"] == [{"name": "node", "image": "x"}]


def test_alias_bombs_are_refused_but_ordinary_aliases_load() -> None:
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    for name, prev in zip("bcdefghi", "abcdefgh"):
        bomb += f"{name}: &{name} [{','.join(['*' + prev] * 9)}]\n"
    with pytest.raises(CompileError) as exc:
        load_documents(bomb, "bomb.yaml")
    assert exc.value.diagnostics[0].code == "YAMLTooLarge"
    assert load_documents("base: &b {x: 1}\nother: *b\n") == [{"base": {"x": 1}, "other": {"x": 1}}]


def test_truncated_name_hash_is_the_leading_five_hex_digits_without_zero_padding() -> None:
    # NVCRE formats the FNV-1a hash with %05x and keeps its first five characters, so a hash whose
    # top hex digit is 0 contributes its digits after that zero, not a leading "0".
    from nvcre.compiler.naming import fnv1a_32, truncate_name

    name = next(
        f"certification-{i}-communication-nccl-all-reduce"
        for i in range(10_000)
        if fnv1a_32(f"certification-{i}-communication-nccl-all-reduce") < 0x10000000
    )
    digest = format(fnv1a_32(name), "x")[:5]
    assert truncate_name(name).endswith("-" + digest)
    assert not truncate_name(name).endswith("-0" + digest[:4])
