"""The Grafana dashboard the install ships (compiler/install/dashboard.json).

Every query must parse as PromQL (promtool ``check rules`` on the queries written as recording
rules, template variables replaced by fixed values) and may read only series the controller
exports, which are taken from the code: a ``ControllerMetrics`` registry with every event family
fed once, written as the controller writes it, plus the state gauges of ``runtime/metrics/gauges.py``
(those need cached objects to appear). The ConfigMap of ``setup render`` carries the file's bytes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.install import render_install
from nvcre.compiler.install.monitoring import DASHBOARD_CONFIGMAP, DASHBOARD_FILE, DASHBOARD_KEY
from nvcre.compiler.yamlio import load_documents
from tests.gotools import go_tool

REPO = Path(__file__).resolve().parents[3]

#: A fixed value for each template variable a query may use (Grafana's built-ins and the dashboard's own).
VARIABLE_VALUES = {
    "__rate_interval": "5m",
    "__interval": "1m",
    "__range": "1h",
    "namespace": "team-a",
    "certification": "burn-in",
    "message_size": "8589934592",
    "busbw_threshold": "350",
}
#: Series Prometheus itself adds for every scrape target (the controller does not export them).
SCRAPE_SERIES = frozenset({"up", "scrape_duration_seconds", "scrape_samples_scraped"})

_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")
_TOKEN = re.compile(
    r"""(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
      |(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)
      |(?P<number>[0-9.][0-9A-Za-z_.+]*)
      |(?P<punct>[(){}\[\],])
      |(?P<other>\S)""",
    re.VERBOSE,
)
#: Words that take a parenthesised list of label names.
_LABEL_LISTS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"})


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD_FILE.read_text(encoding="utf-8"))
    return loaded


def panels(model: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in model["panels"]:
        yield panel
        yield from panel.get("panels", [])  # a collapsed row keeps its panels inside


def queries(model: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and of every label_values variable's series selector."""
    found = [(f"{panel['title']} / {target['refId']}", target["expr"]) for panel in panels(model) for target in panel.get("targets", [])]
    for variable in model["templating"]["list"]:
        if variable["type"] == "query":
            match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", variable["query"]["query"])
            assert match, f"variable {variable['name']}: expected label_values(<selector>, <label>)"
            found.append((f"variable {variable['name']}", match[1]))
    return found


def substitute(expr: str) -> str:
    """``expr`` with every template variable replaced by its fixed value; an unknown one is an error."""

    def value(match: re.Match[str]) -> str:
        name = next(group for group in match.groups() if group)
        if name not in VARIABLE_VALUES:
            raise KeyError(f"unknown template variable {name!r} in {expr!r}")
        return VARIABLE_VALUES[name]

    return _VARIABLE.sub(value, expr)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: names outside braces, brackets and label lists,
    not calls or aggregations (followed by ``(``, ``by`` or ``without``) and not keywords."""
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(expr)]
    names: set[str] = set()
    braces = brackets = 0
    skip_list = False  # the next "(...)" is a list of label names
    depth_of_list: int | None = None
    parens = 0
    for index, (kind, text) in enumerate(tokens):
        following = tokens[index + 1][1] if index + 1 < len(tokens) else ""
        if text == "{":
            braces += 1
        elif text == "}":
            braces -= 1
        elif text == "[":
            brackets += 1
        elif text == "]":
            brackets -= 1
        elif text == "(":
            parens += 1
            if skip_list:
                depth_of_list, skip_list = parens, False
        elif text == ")":
            if depth_of_list == parens:
                depth_of_list = None
            parens -= 1
        elif kind == "name" and not braces and not brackets and depth_of_list is None:
            if text in _LABEL_LISTS:
                skip_list = following == "("
            elif text not in _KEYWORDS and following not in ("(", "by", "without"):  # a call or an aggregation
                names.add(text)
    assert "__name__" not in expr, f"a selector by __name__ cannot be checked: {expr}"
    return names


@cache
def exported() -> frozenset[str]:
    """Every series name the controller serves, from the code."""
    from nvcre.runtime.kube.accounting import RequestCounter
    from nvcre.runtime.kube.queue import QueueStats
    from nvcre.runtime.metrics.exposition import write_exposition
    from nvcre.runtime.metrics.gauges import FAMILIES
    from nvcre.runtime.metrics.registry import ControllerMetrics

    requests = RequestCounter()
    requests.record("get", "pods")
    stats = {"job": QueueStats(adds=1, coalesced=0, delayed_coalesced=0, handed_out=1, wait_seconds=0.1, longest_wait=0.1, depth=0)}
    metrics = ControllerMetrics({}, lambda: False, requests=requests, queue_stats=lambda: stats, job_alive=lambda ns, job: True)
    metrics.observe("job", "success", 0.0)
    metrics.queue_wait.labels("job").observe(0.1)
    metrics.node_events.labels("relevant").inc()
    metrics.over_budget.labels("job").inc()
    events = metrics.jobs
    events.reconciled("ns", "j", "w", "success", 0.1)
    events.workload_created("ns", "j", "w")
    events.health_checked("ns", "j", "w", 0.1, 2)
    events.hardware_failures("ns", "j", "w", ["node-1"], first=True)
    chunks: list[bytes] = []
    write_exposition(metrics.registry, chunks.append)
    lines = b"".join(chunks).decode().splitlines()
    served = {re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line)[0] for line in lines if line and not line.startswith("#")}  # type: ignore[index]
    return frozenset(served | set(FAMILIES))


def unknown_metrics(expr: str) -> set[str]:
    return metric_names(substitute(expr)) - exported() - SCRAPE_SERIES


# --- the model ----------------------------------------------------------------------------------


def test_the_model_is_a_current_grafana_dashboard_with_its_variables() -> None:
    model = dashboard()
    assert model["schemaVersion"] >= 41 and model["uid"] and model["title"]
    variables = {v["name"]: v for v in model["templating"]["list"]}
    assert (variables["datasource"]["type"], variables["datasource"]["query"]) == ("datasource", "prometheus")
    for name in ("namespace", "certification"):
        assert variables[name]["type"] == "query" and variables[name]["query"]["query"].startswith("label_values(")
        assert variables[name]["multi"] and variables[name]["includeAll"] and variables[name]["allValue"] == ".*"
    assert variables["busbw_threshold"]["type"] == "textbox"
    ids = [panel["id"] for panel in panels(model)]
    assert len(ids) == len(set(ids))
    for panel in panels(model):
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"} and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] != "row":
            sources = [panel["datasource"], *(t["datasource"] for t in panel["targets"])]
            assert all(s == {"type": "prometheus", "uid": "${datasource}"} for s in sources), panel["title"]
            assert panel["targets"] and panel["description"], panel["title"]
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"]["uid"] == "${datasource}"


def test_the_bandwidth_panels_draw_the_threshold_variable() -> None:
    bandwidth = [p for p in panels(dashboard()) if "nvcre_nccl_busbw_gbs" in json.dumps(p.get("targets", []))]
    assert len(bandwidth) >= 2
    for panel in bandwidth:
        assert any("$busbw_threshold" in t["expr"] for t in panel["targets"]), panel["title"]


def test_the_rows_cover_what_a_burn_in_operator_watches() -> None:
    text = DASHBOARD_FILE.read_text(encoding="utf-8")
    for family in (
        "nvcre_certification_status",
        "nvcre_workflow_status",
        "nvcre_hardware_failures_detected_total",
        "nvcre_topology_failed_nodes",
        "nvcre_nccl_busbw_gbs",
        "nvcre_goodput_ratio",
        "nvcre_goodput_avg_step_time_seconds",
        "nvcre_controller_reconcile_total",
        "nvcre_workqueue_queue_duration_seconds_bucket",
        "nvcre_api_requests_total",
    ):
        assert family in text, family


# --- metric names -------------------------------------------------------------------------------


def test_every_query_reads_only_series_the_controller_exports() -> None:
    found = queries(dashboard())
    assert len(found) > 20
    for where, expr in found:
        assert metric_names(substitute(expr)) or expr == "vector($busbw_threshold)", f"{where}: reads no metric"
        assert not unknown_metrics(expr), f"{where}: {sorted(unknown_metrics(expr))} not exported"


def test_the_name_check_finds_an_unknown_metric_and_ignores_everything_else() -> None:
    assert unknown_metrics('sum by (job) (rate(nvcre_nccl_busbw_gbps{namespace=~"$namespace"}[5m]))') == {"nvcre_nccl_busbw_gbps"}
    assert unknown_metrics("nvcre_goodput_ratio offset 1h") == set()
    expr = (
        'histogram_quantile(0.95, sum by (le, node) (rate(nvcre_reconcile_duration_seconds_bucket{job="up", result=~"a|b"}[$__rate_interval])))'
        " > on (namespace) group_left (workflow) nvcre_job_failed_nodes and ignoring (status) vector($busbw_threshold)"
    )
    assert metric_names(substitute(expr)) == {"nvcre_reconcile_duration_seconds_bucket", "nvcre_job_failed_nodes"}
    with pytest.raises(KeyError, match="thresold"):
        substitute("vector($thresold)")


def test_exported_names_come_with_their_suffixes_and_cover_the_documented_families() -> None:
    names = exported()
    assert {
        "nvcre_reconcile_total",
        "nvcre_reconcile_duration_seconds_bucket",
        "nvcre_controller_reconcile_duration_seconds_count",
    } <= names
    assert "nvcre_reconcile_duration_seconds" not in names  # a histogram is read through its suffixes
    documented = set(re.findall(r"^\| `(nvcre_[a-z0-9_]+)`", (REPO / "docs" / "metrics.md").read_text(), re.MULTILINE))
    assert len(documented) > 30
    histograms = {n.removesuffix("_bucket") for n in names if n.endswith("_bucket")}
    assert documented - histograms <= names, sorted(documented - histograms - names)


# --- promtool -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def promtool(request: pytest.FixtureRequest) -> Path:
    return go_tool(request, "prometheus", "promtool")


def check_rules(promtool: Path, exprs: list[str], directory: Path) -> subprocess.CompletedProcess[str]:
    """promtool check rules on ``exprs`` written as recording rules (variables substituted)."""
    rules = [{"record": f"dashboard:query_{index}", "expr": substitute(expr)} for index, expr in enumerate(exprs)]
    path = directory / "dashboard_queries.yaml"
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}, indent=2))  # JSON is YAML
    return subprocess.run([str(promtool), "check", "rules", str(path)], capture_output=True, text=True, timeout=120, check=False)


def test_every_query_parses(promtool: Path, tmp_path: Path) -> None:
    exprs = [expr for _, expr in queries(dashboard())]
    checked = check_rules(promtool, exprs, tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in checked.stdout


def test_a_query_that_does_not_parse_fails_the_check(promtool: Path, tmp_path: Path) -> None:
    good = "sum(rate(nvcre_reconcile_total[$__rate_interval]))"
    assert check_rules(promtool, [good], tmp_path).returncode == 0
    broken = check_rules(promtool, [good, "sum(rate(nvcre_reconcile_total[$__rate_interval])"], tmp_path)
    assert broken.returncode != 0 and "FAILED" in broken.stdout + broken.stderr, broken.stdout + broken.stderr


# --- the ConfigMap ------------------------------------------------------------------------------


def dashboard_configmaps(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == DASHBOARD_CONFIGMAP]


def test_setup_render_ships_the_source_bytes_in_a_sidecar_configmap() -> None:
    rendered = subprocess.run(
        [sys.executable, "-m", "nvcre.cli.setup", "render", "--set", "namespace.name=gpu-cert"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert rendered.returncode == 0, rendered.stderr
    (configmap,) = dashboard_configmaps(load_documents(rendered.stdout))
    assert configmap["metadata"]["namespace"] == "gpu-cert"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["data"] == {DASHBOARD_KEY: DASHBOARD_FILE.read_text(encoding="utf-8")}
    assert DASHBOARD_FILE.read_bytes() == configmap["data"][DASHBOARD_KEY].encode("utf-8")


def test_the_dashboard_can_be_turned_off_alone() -> None:
    objects = render_install([{"metrics": {"grafanaDashboard": {"enabled": False}}}]).objects
    kinds = {o["kind"] for o in objects}
    assert not dashboard_configmaps(objects) and {"ServiceMonitor", "PrometheusRule"} <= kinds
