"""The Helm chart generator (nvcre.compiler.install.chart) offline: committed chart is current, values and schema match the model."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.install import DEFAULT_VALUES, render_install
from nvcre.compiler.install.chart import generate_chart
from nvcre.compiler.install.chart_templates import ChartError
from nvcre.compiler.install.chart_values import COMMENTS
from nvcre.compiler.install.manager import manager_objects
from nvcre.compiler.install.rbac import rbac_objects
from nvcre.compiler.install.render import LABELS
from nvcre.compiler.yamlio import load_documents

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "nvcre"


def setup_chart(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nvcre.cli.setup", "chart", *args], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )


def committed() -> dict[str, bytes]:
    return {p.relative_to(CHART).as_posix(): p.read_bytes() for p in sorted(CHART.rglob("*")) if p.is_file()}


def test_the_committed_chart_is_what_the_generator_writes(tmp_path: Path) -> None:
    fresh = {name: text.encode() for name, text in generate_chart().items()}
    assert committed() == fresh, "charts/nvcre is stale: run nvcrectl setup chart --output-dir charts/nvcre"
    written = setup_chart("--output-dir", str(tmp_path / "nvcre"))
    assert written.returncode == 0, written.stderr
    again = {p.relative_to(tmp_path / "nvcre").as_posix(): p.read_bytes() for p in (tmp_path / "nvcre").rglob("*") if p.is_file()}
    assert again == fresh
    assert generate_chart() == generate_chart()  # byte stable


def test_check_reports_changed_missing_and_stale_files(tmp_path: Path) -> None:
    target = tmp_path / "nvcre"
    assert setup_chart("--output-dir", str(target)).returncode == 0
    assert setup_chart("--output-dir", str(target), "--check").returncode == 0
    (target / "templates" / "deployment.yaml").write_text("edited\n")
    (target / "templates" / "namespace.yaml").unlink()
    (target / "templates" / "extra.yaml").write_text("kind: ConfigMap\n")
    (target / "README.md").write_text("kept: not the generator's\n")
    checked = setup_chart("--output-dir", str(target), "--check")
    assert checked.returncode == 1
    assert "differs" in checked.stderr and "deployment.yaml" in checked.stderr
    assert "missing" in checked.stderr and "namespace.yaml" in checked.stderr
    assert "not generated" in checked.stderr and "extra.yaml" in checked.stderr
    assert setup_chart("--output-dir", str(target)).returncode == 0
    assert setup_chart("--output-dir", str(target), "--check").returncode == 0
    assert not (target / "templates" / "extra.yaml").exists() and (target / "README.md").is_file()


def test_it_will_not_overwrite_another_chart(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: something-else\nversion: 1.0.0\n")
    refused = setup_chart("--output-dir", str(tmp_path))
    assert refused.returncode == 2 and "another chart" in refused.stderr and "Traceback" not in refused.stderr
    assert (tmp_path / "Chart.yaml").read_text().endswith("something-else\nversion: 1.0.0\n")


def test_values_yaml_is_the_defaults_with_a_comment_on_every_key() -> None:
    files = generate_chart()
    (values,) = load_documents(files["values.yaml"])
    assert values == DEFAULT_VALUES

    def paths(node: Any, prefix: str = "") -> list[str]:
        if not isinstance(node, dict) or prefix in ("manager.resources.", "manager.nodeSelector."):
            return []
        return [p for key, value in node.items() for p in [prefix + key, *paths(value, prefix + key + ".")]]

    assert sorted(paths(DEFAULT_VALUES)) == sorted(COMMENTS)
    for path, comment in COMMENTS.items():
        assert f"# {comment}\n" in files["values.yaml"], path


def test_every_template_action_is_a_quoted_value_or_a_condition() -> None:
    for name, text in generate_chart().items():
        if not name.startswith("templates/") or name.endswith(".tpl"):
            continue
        assert "NVCREHOLE" not in text, name
        for action in re.findall(r"\{\{-? ?(.*?) ?-?\}\}", text):
            ok = (
                action.endswith("| toJson")
                or action.startswith(("if ", "range ", 'include "nvcre.imagePullSecrets"'))
                or action in ("end", '"{{"')
            )
            assert ok, f"{name}: {action}"


# --- the schema refuses what resolve_values refuses ----------------------------------------------

GOOD = [
    {},
    {"rbac": {"scope": "namespaced", "runNamespaces": ["team-a", "team-b"]}},
    {"manager": {"image": {"digest": "sha256:" + "a" * 64, "tag": ""}, "replicas": 0, "leaderElection": False}},
    {"manager": {"resources": {}, "nodeSelector": {"a": "b"}, "tolerations": [{"operator": "Exists"}], "workers": 9}},
    {"metrics": {"certSecret": "nvcre-metrics-cert", "serviceMonitor": {"labels": {"release": "kps", "example.com/team": ""}}}},
]
BAD = [
    {"rbac": {"scope": "everywhere"}},
    {"rbac": {"scoop": "cluster"}},
    {"rbac": {"runNamespaces": ["a", "a"]}},
    {"namespace": {"name": "team-a\n"}},
    {"serviceAccount": {"name": "Bad Name"}},
    {"manager": {"image": {"digest": "sha256:abc"}}},
    {"manager": {"image": {"tag": "no spaces allowed"}}},
    {"manager": {"image": {"repository": "UPPER/case"}}},
    {"manager": {"image": {"pullPolicy": "Sometimes"}}},
    {"manager": {"imagePullSecrets": ["Not_A_Secret"]}},
    {"manager": {"replicas": 2, "leaderElection": False}},
    {"manager": {"replicas": "2"}},
    {"manager": {"replicas": True}},
    {"manager": {"workers": 0}},
    {"manager": {"logLevel": "loud"}},
    {"manager": {"namespaceAccessTimeout": "10 minutes"}},
    {"manager": {"tolerations": {}}},
    {"crds": {"install": "yes"}},
    {"metrics": {"certSecret": "Not_A_Secret"}},
    {"metrics": {"serviceMonitor": {"labels": {"release": 1}}}},
    {"metrics": {"prometheusRule": {"labels": {"-bad": "x"}}}},
]


def _schema() -> dict[str, Any]:
    """The chart's schema with ECMA-262 anchors for Python's ``re`` (where ``$`` also matches before a final newline)."""

    def ecma(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (v[:-1] + r"\Z" if k == "pattern" and v.endswith("$") else ecma(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [ecma(item) for item in node]
        return node

    schema: dict[str, Any] = ecma(json.loads(generate_chart()["values.schema.json"]))
    return schema


def _merged(layer: dict[str, Any]) -> dict[str, Any]:
    from nvcre.compiler.install import merge_values

    return merge_values(DEFAULT_VALUES, layer)


@pytest.mark.parametrize("layer", GOOD)
def test_schema_accepts_what_render_accepts(layer: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    render_install([layer])
    jsonschema.validate(_merged(layer), _schema())


@pytest.mark.parametrize("layer", BAD)
def test_schema_refuses_what_render_refuses(layer: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from nvcre.compiler.diagnostics import CompileError

    with pytest.raises(CompileError):
        render_install([layer])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_merged(layer), _schema())


# --- the generator refuses what it cannot express ------------------------------------------------


def _controller(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [*manager_objects(values, dict(LABELS)), *rbac_objects(values, dict(LABELS))]


def test_literal_braces_in_compiled_objects_are_escaped() -> None:
    def render(values: dict[str, Any]) -> list[dict[str, Any]]:
        objects = _controller(values)
        objects[-1] = copy.deepcopy(objects[-1])
        objects[-1]["metadata"]["annotations"] = {"note": "{{ not a template }}"}
        return objects

    text = "".join(t for n, t in generate_chart(render).items() if n.startswith("templates/"))
    assert '{{ "{{" }} not a template }}' in text


def test_a_value_in_a_key_is_refused() -> None:
    def render(values: dict[str, Any]) -> list[dict[str, Any]]:
        objects = _controller(values)
        return [{**o, "data": {values["namespace"]["name"]: "x"}} if o["kind"] == "ServiceAccount" else o for o in objects]

    with pytest.raises(ChartError, match="keys must be fixed"):
        generate_chart(render)


def test_a_boolean_that_changes_structure_is_refused() -> None:
    def render(values: dict[str, Any]) -> list[dict[str, Any]]:
        objects = _controller(values)
        if values["manager"]["leaderElection"]:
            return [{**o, "extra": {"leader": True}} if o["kind"] == "ServiceAccount" else o for o in objects]
        return objects

    with pytest.raises(ChartError, match="keys change"):
        generate_chart(render)


def test_strings_with_values_inside_become_printf_without_spaces_or_format_surprises() -> None:
    from nvcre.compiler.install.chart_templates import Holes

    holes = Holes()
    a, b = holes.token("$.Values.a"), holes.token("$.Values.b")
    assert holes.expression_of(a) == "$.Values.a"
    assert holes.expression_of(f"{a}{b}") == 'printf "%v%v" ($.Values.a) ($.Values.b)'
    assert holes.expression_of(f"100% {a}") == 'printf "100%% %v" ($.Values.a)'
    assert holes.expression_of('say "hi"') == '"say \\"hi\\""'


def test_two_booleans_on_one_value_are_refused() -> None:
    def render(values: dict[str, Any]) -> list[dict[str, Any]]:
        flag = f"{values['manager']['leaderElection']}-{values['namespace']['create']}"
        return [
            {**o, "metadata": {**o["metadata"], "annotations": {"flags": flag}}} if o["kind"] == "ServiceAccount" else o
            for o in _controller(values)
        ]

    with pytest.raises(ChartError, match="more than one boolean"):
        generate_chart(render)


def test_a_certificate_secret_adds_list_items_under_if_and_switches_the_tls_config() -> None:
    files = generate_chart()
    deployment_text, monitor_text = files["templates/deployment.yaml"], files["templates/servicemonitor.yaml"]
    guarded = re.findall(r"\{\{- if \$\.Values\.metrics\.certSecret \}\}\n(.*)\n\{\{- end \}\}", deployment_text)
    assert len(guarded) == 3 and all(line.lstrip().startswith("- {{ ") for line in guarded)
    assert "--metrics-cert-path=" in guarded[0] and '"secretName" ($.Values.metrics.certSecret)' in guarded[2]
    assert "tlsConfig: {{ ternary (" in monitor_text and "(not (empty $.Values.metrics.certSecret))" in monitor_text
    for name, value in (("servicemonitor", "serviceMonitor"), ("prometheusrule", "prometheusRule")):
        assert f"$.Values.metrics.{value}.labels | toJson }}}}" in files[f"templates/{name}.yaml"]


def test_a_switch_whose_list_items_neither_stay_nor_go_is_refused() -> None:
    def render(values: dict[str, Any]) -> list[dict[str, Any]]:
        objects = _controller(values)
        items = ["own", "a", "b"] if values["metrics"]["certSecret"] else ["a", "c"]
        return [{**o, "items": items} if o["kind"] == "ServiceAccount" else o for o in objects]

    with pytest.raises(ChartError, match="items change"):
        generate_chart(render)
