"""Every claim of docs/api.md "Differences from NVCRE" is checked by a test.

The section lists what reads the same as NVCRE v0.8.2 (one bullet per area) and what is still
different (one table row each). :data:`CLAIMS` names, for a phrase that opens each bullet and
row, the tests that check what it says: a test here where no other test did, else the tests
beside it. A bullet or row added without an entry, or an entry naming a test that does not
exist, fails :func:`test_every_bullet_and_row_names_the_tests_that_check_it`.

NVCRE facts used here come from its API types (``api/v1alpha1`` of
``NVIDIA/cluster-readiness-engine``): the Certification status holds ``conditions`` and
``categoryStatuses``; the WorkloadRun status ``conditions``, ``workflowRef``,
``detectedPlatform``, ``detectedGPUArchitecture``, ``resolvedGpusPerNode``,
``succeededNodesRef`` and ``failedNodesRef``.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.api import CRD_DIR, KINDS
from nvcre.compiler.api.validate import validate
from nvcre.compiler.vocabulary import WORKLOADRUN_FINALIZER

REPO = Path(__file__).resolve().parents[2]
HERE = "tests/conformance/test_differences_claims.py"
NVCRECTL = shutil.which("nvcrectl", path=str(Path(sys.executable).parent)) or "nvcrectl"

NVCRE_KINDS = {"Certification", "WorkloadRun", "Workflow", "Job", "LogProfile", "GoodputMeasurement", "BandwidthMeasurement"}
NVCRE_STATUS = {
    "Certification": {"conditions", "categoryStatuses"},
    "WorkloadRun": {
        "conditions",
        "workflowRef",
        "detectedPlatform",
        "detectedGPUArchitecture",
        "resolvedGpusPerNode",
        "succeededNodesRef",
        "failedNodesRef",
    },
}
OURS_IN_STATUS = {"phase", "observedGeneration"}

CONFORMANCE = "tests/conformance"
#: a phrase opening each bullet and row of the section -> the tests that check its claims
CLAIMS: dict[str, tuple[str, ...]] = {
    "- **The API**": (
        f"{HERE}::test_the_kinds_are_nvcres_and_no_report_export_kind_is_served",
        f"{HERE}::test_certification_and_workloadrun_status_add_only_phase_and_observed_generation",
        f"{HERE}::test_applied_overrides_are_strings_and_diagnose_rounds_add_bandwidth_and_nodes",
        f"{HERE}::test_node_and_domain_results_follow_the_tracking_switches",
        "tests/runtime/reconcile/test_measurement_kinds_transports.py::test_every_network_name_is_kept_sorted_once",
    ),
    "- **Admission of the fields NVCRE leaves open**": (
        f"{CONFORMANCE}/test_nvcre_admission_permissive.py::test_a_workflow_with_any_go_duration_is_admitted",
        f"{CONFORMANCE}/test_nvcre_admission_permissive.py::test_a_certification_keeps_nvcres_own_duration_pattern",
        f"{CONFORMANCE}/test_nvcre_admission_permissive.py::test_a_job_without_a_health_expression_is_admitted",
        f"{CONFORMANCE}/test_nvcre_admission_permissive.py::test_free_topology_modes_and_template_object_metadata_are_admitted",
        "tests/integration/conformance/test_nvcre_admission_on_the_api_server.py::test_the_server_and_validate_admit_what_nvcre_admits",
    ),
    "- **Conditions, labels and Events**": (
        f"{CONFORMANCE}/test_nvcre_reasons_and_events.py::test_the_workloadrun_failed_reason_follows_the_workflows_failed_reason",
        f"{CONFORMANCE}/test_nvcre_reasons_and_events.py::test_a_build_failure_that_cannot_be_recorded_is_a_build_failed_status_update_failed_warning",
        f"{CONFORMANCE}/test_nvcre_reasons_and_events.py::test_nic_detection_is_an_event_only_when_it_chose_nothing",
        f"{CONFORMANCE}/test_nvcre_reasons_and_events.py::test_gke_and_tcpxo_warnings_are_the_certification_tiers",
        f"{CONFORMANCE}/test_nvcre_reasons_and_events.py::test_each_controller_reports_its_events_under_its_own_name",
        f"{CONFORMANCE}/test_nvcre_event_series.py::test_a_repeated_event_is_one_object_whose_series_counts_every_occurrence",
        f"{CONFORMANCE}/test_nvcre_event_series.py::test_after_six_minutes_of_quiet_the_next_occurrence_starts_a_new_event",
        f"{CONFORMANCE}/test_nvcre_event_series.py::test_a_failed_create_is_forgotten_and_the_next_occurrence_creates_anew",
        "tests/integration/test_event_series.py::test_a_repeated_event_is_one_object_with_the_count_of_its_repeats",
        f"{HERE}::test_a_workloadruns_workflow_carries_nvcres_workload_run_label",
    ),
    "- **Reports**": (
        f"{CONFORMANCE}/test_report_contract.py::test_every_golden_report_reads_as_nvcres",
        f"{CONFORMANCE}/test_report_contract.py::test_cliques_count_validated_nodes_per_domain_and_replace_bandwidth_by_group",
        f"{CONFORMANCE}/test_nvcre_junit_document.py::test_suites_and_cases_carry_nvcres_names_classnames_and_seconds",
        f"{CONFORMANCE}/test_nvcre_junit_document.py::test_an_unfinished_category_is_an_error_a_ci_gate_counts",
        "tests/runtime/report/test_text.py::test_the_diagnosis_section_is_nvcres_then_ours",
    ),
    "- **The MCP server**": (
        f"{CONFORMANCE}/test_nvcre_mcp_tool_hints.py::test_every_tool_carries_the_read_only_hint",
        f"{CONFORMANCE}/test_nvcre_mcp_tool_hints.py::test_the_server_and_its_tools_are_described_as_nvcres",
        f"{CONFORMANCE}/test_nvcre_mcp_tool_hints.py::test_a_missing_certification_is_nvcres_tool_error_text",
        f"{CONFORMANCE}/test_nvcre_mcp_tool_hints.py::test_empty_optional_fields_are_left_out_of_the_status_answer",
    ),
    "- **The CLI**": (
        "tests/cli/test_certification_run_golden.py::test_workloadrun_status_prints_nvcres_one_word_and_json",
        f"{CONFORMANCE}/test_nvcrectl_output_contract.py::test_version_flag_prints_cobras_nvcrectl_version_line",
        f"{CONFORMANCE}/test_nvcrectl_output_contract.py::test_list_categories_default_table_is_domain_and_variant_as_nvcre_prints_it",
        f"{CONFORMANCE}/test_nvcrectl_output_contract.py::test_cluster_info_json_is_nvcres_cluster_info",
        f"{CONFORMANCE}/test_nvcrectl_output_contract.py::test_workloadrun_render_json_is_one_workflow_object",
        f"{CONFORMANCE}/test_nvcrectl_output_contract.py::test_workloadrun_render_takes_kubeconfig_and_context",
        f"{CONFORMANCE}/test_nvcrectl_output_contract.py::test_closed_stdout_ends_quietly_as_sigpipe_ends_a_go_cli",
        f"{CONFORMANCE}/test_nvcre_workloadrun_render_annotations.py::test_platform_and_architecture_given_are_both_annotated",
        f"{CONFORMANCE}/test_nvcre_workloadrun_render_annotations.py::test_a_defaulted_platform_is_not_named_but_the_architecture_is",
        "tests/integration/test_workloadrun_render_annotations_sim.py::test_a_dry_run_names_the_detected_platform_and_architecture",
        f"{HERE}::test_a_workloadruns_default_timeout_per_job_is_24h",
        "tests/compiler/test_durations.py::test_canonical_duration_prints_as_go_does",
    ),
    "- **Monitoring**": (
        "tests/integration/test_prometheus_scrape.py::test_prometheus_holds_every_documented_family_with_nvcres_label_names",
        "tests/integration/test_prometheus_scrape.py::test_prometheus_scrapes_the_secured_endpoint_and_loads_every_shipped_rule",
        "tests/compiler/install/test_monitoring_alert_rules.py::test_every_nvcre_rule_is_shipped_under_its_name_with_its_values",
        f"{CONFORMANCE}/test_nvcre_service_monitor_release_label.py::test_the_documented_setting_labels_the_rendered_service_monitor_and_nothing_else",
    ),
    "Fields of ours are added beside NVCRE's, never in their place.": (
        f"{CONFORMANCE}/test_report_contract.py::test_the_schema_refuses_a_renamed_or_retyped_field",
        f"{CONFORMANCE}/test_nvcrectl_output_contract.py::test_cluster_info_json_is_nvcres_cluster_info",
        f"{CONFORMANCE}/test_nvcre_workloadrun_render_annotations.py::test_the_render_facts_of_ours_stay_beside_nvcres_annotations",
    ),
    "| Report JSON and text: extra fields and lines of ours": (
        f"{CONFORMANCE}/test_report_contract.py::test_every_golden_report_reads_as_nvcres",
        "tests/runtime/report/test_text.py::test_the_diagnosis_section_is_nvcres_then_ours",
    ),
    "| Diagnose test stages of the adaptive planner's groups": (
        "tests/compiler/diagnose/test_session.py::test_stages_are_reported_under_nvcre_names",
    ),
    "| `nvcre_hardware_failures_detected_total` counts each newly flagged node once": (
        "tests/runtime/metrics/test_gauges_families.py::test_health_check_counts_passes_nodes_and_new_hardware_failures",
        "tests/runtime/metrics/test_gauges_families.py::test_controller_counts_job_reconciles_under_nvcre_labels_and_drops_them_with_the_job",
    ),
    "| Stricter checks on NVCRE's CLI flags": (
        "tests/cli/test_main_nvcre_flags.py::test_workloadrun_run_refuses_bad_target_flags_before_any_cluster",
    ),
    "| An unknown `-o` value of `list-categories` or `cluster info` is refused": (
        f"{HERE}::test_an_unknown_output_format_is_refused",
        f"{HERE}::test_list_categories_wide_is_an_extra_table",
        f"{HERE}::test_a_version_command_stands_beside_the_flag",
    ),
    "| Where `run --wait` prints the report": (
        "tests/cli/test_reporting_streams.py::test_the_report_is_on_stdout_whatever_the_verdict",
        "tests/cli/test_reporting_streams.py::test_nvcre_streams_puts_a_failed_certification_report_on_stderr",
    ),
    "| GPU architecture of a node without `nvidia.com/gpu.product`": (
        "tests/compiler/detect/test_hints.py::test_gke_accelerator_label_names_the_architecture_of_a_real_gke_node",
        "tests/compiler/detect/test_hints.py::test_karpenter_gpu_labels_name_architecture_and_count",
    ),
    "| Tesla, GeForce, Quadro, RTX and vGPU products keep distinct architecture keys": (
        "tests/compiler/detect/test_gpu_arch.py::test_tesla_products_are_not_one_architecture",
        "tests/compiler/detect/test_eleventh_holdout_nodes.py::test_distinct_rtx_geforce_quadro_and_vgpu_products_get_distinct_keys",
    ),
    "| A node whose `nvidia.com/gpu.product` names MIG devices": (
        "tests/compiler/plan/test_planner.py::test_a_node_whose_gpus_are_mig_devices_is_dropped_whatever_the_request",
        "tests/compiler/detect/test_capacity.py::test_the_capacity_filter_leaves_mig_nodes_out_with_a_warning",
        "tests/compiler/plan/test_planner.py::test_a_node_of_mig_devices_only_under_the_mixed_strategy_is_dropped",
    ),
    "| A node that advertises `nvidia.com/gpu: 0` beside a positive `nvidia.com/gpu.shared`": (
        "tests/compiler/plan/test_planner.py::test_a_node_that_offers_its_gpus_only_as_shared_replicas_is_dropped",
        "tests/compiler/detect/test_capacity.py::test_a_node_that_advertises_only_shared_gpus_has_no_whole_gpu_and_is_left_out",
    ),
    "| A node whose `Ready` condition turns `Unknown` or `False` while its Job runs": (
        "tests/runtime/reconcile/job/test_health_not_ready.py::test_a_lost_node_fails_the_job_under_the_default_expression_and_the_healthy_one_is_not_blamed",
        "tests/runtime/reconcile/job/test_health_not_ready.py::test_a_job_without_an_expression_still_fails_on_a_lost_node",
    ),
    "| Diagnose: the adaptive planner by default": (
        "tests/compiler/plan/test_planner.py::test_diagnose_plans_the_adaptive_local_screen_by_default",
        "tests/compiler/plan/test_planner.py::test_diagnose_plans_the_screening_round_under_the_baseline",
        "tests/compiler/diagnose/test_baseline_planners.py::test_adaptive_isolates_one_and_two_bad_nodes_in_two_rounds",
    ),
    "| `setup init` installs Kubeflow Trainer by applying the `helm template` output itself": (
        "tests/integration/test_setup_cluster.py::test_init_installs_trainer_on_a_bare_cluster_and_reset_removes_it",
        "tests/integration/test_setup_cluster.py::test_a_jobset_someone_else_installed_is_left_untouched",
    ),
    "| `setup reset` removes the JobSet CRD it installed when no JobSet exists": (
        "tests/integration/test_setup_cluster.py::test_init_installs_trainer_on_a_bare_cluster_and_reset_removes_it",
        "tests/integration/test_setup_reset_keeps.py::test_reset_keeps_what_other_teams_put_in_our_namespaces_and_the_trainer_they_use",
    ),
    "| Exit codes 2, 3 and 130": (
        "tests/cli/test_main_help_and_exits.py::test_exit_codes_and_messages_without_a_cluster",
        "tests/cli/test_main_help_and_exits.py::test_a_timed_out_wait_exits_3_and_says_how_to_follow_the_run",
        "tests/cli/test_main_help_and_exits.py::test_ctrl_c_exits_130_and_leaves_the_run",
    ),
    "| Failed nodes in the report before they reach the ConfigMap": (
        "tests/runtime/judge/test_verdict.py::test_detector_message_reaches_failed_node_details",
    ),
    "| Extra Events on restarts and teardown; a WorkloadRun finalizer": (
        "tests/runtime/judge/test_restart_status.py::test_a_restart_counts_once_clears_the_workload_clocks_and_says_so_in_nvcre_words",
        "tests/runtime/judge/test_restart_status.py::test_the_attempt_failure_names_pod_node_and_exit_code",
        f"{HERE}::test_the_workloadrun_finalizer_holds_while_its_workflow_is_torn_down_then_says_why_it_let_go",
    ),
    "| An unknown threshold key": ("tests/compiler/api/test_validate.py::test_threshold_keys_are_known_metrics",),
    "| The same category entry (domain, variant and options) twice": (
        "tests/compiler/api/test_validate.py::test_an_identical_category_twice_is_rejected",
        "tests/compiler/api/test_validate.py::test_the_same_category_with_different_options_is_accepted",
    ),
    "| A target requirement with `Gt` or `Lt` needs exactly one value": (
        f"{CONFORMANCE}/test_nvcre_node_selector_gt_lt.py::test_anything_but_one_integer_value_is_refused_at_the_values",
        f"{CONFORMANCE}/test_nvcre_node_selector_gt_lt.py::test_a_single_integer_value_is_admitted_in_every_kinds_target",
    ),
    "| A WorkloadRun with `placement: Unpinned`": (
        "tests/compiler/api/test_validate.py::test_unpinned_placement_rejects_node_and_rack_scales",
    ),
    "| Negative and malformed values of the Workflow, Job, measurement and WorkloadRun durations": (
        f"{CONFORMANCE}/test_nvcre_admission_permissive.py::test_negative_or_malformed_durations_stay_refused",
        "tests/integration/conformance/test_nvcre_admission_on_the_api_server.py::test_the_server_and_validate_refuse_a_negative_duration_at_the_field",
    ),
    "| A GoodputMeasurement or BandwidthMeasurement needs `spec.jobRef`": (
        f"{HERE}::test_a_measurement_without_a_job_ref_is_refused_at_the_field",
    ),
    "| The ServiceMonitor has no `release` label by default": (
        f"{CONFORMANCE}/test_nvcre_service_monitor_release_label.py::test_the_default_is_the_one_the_docs_state_in_setup_render_and_in_the_chart",
    ),
    "| No ReportExportPolicy or ReportExport kinds": (f"{HERE}::test_the_kinds_are_nvcres_and_no_report_export_kind_is_served",),
}


def _section() -> str:
    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    return text[text.index("## Differences from NVCRE") : text.index("### CLI flags beside NVCRE's")]


def _claim_lines() -> Iterator[str]:
    """The opening line of every bullet and table row of the section (the table header excluded)."""
    for line in _section().splitlines():
        if line.startswith("- **") or line.startswith("Fields of ours"):
            yield line
        elif line.startswith("| ") and not line.startswith("| difference |"):
            yield line


@cache
def _test_names(path: str) -> frozenset[str]:
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    return frozenset(node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"))


def test_every_bullet_and_row_names_the_tests_that_check_it() -> None:
    lines = list(_claim_lines())
    assert len(lines) >= 20, "the section's bullets and rows were found"
    unclaimed = [line[:90] for line in lines if not any(line.startswith(phrase) for phrase in CLAIMS)]
    assert not unclaimed, f"claims of docs/api.md with no test named in CLAIMS: {unclaimed}"
    stale = [phrase for phrase in CLAIMS if not any(line.startswith(phrase) for line in lines)]
    assert not stale, f"CLAIMS entries the section no longer has: {stale}"
    missing = []
    for tests in CLAIMS.values():
        for reference in tests:
            path, name = reference.split("::")
            if not (REPO / path).is_file() or name not in _test_names(path):
                missing.append(reference)
    assert not missing, f"tests named in CLAIMS that do not exist: {missing}"


# ------------------------------------------------------------------ checks no other test made


@cache
def _crd_schema(kind: str) -> dict[str, Any]:
    for path in sorted(Path(CRD_DIR).glob("*.yaml")):
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        if crd["spec"]["names"]["kind"] == kind:
            return dict(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    raise AssertionError(f"no CRD for {kind}")


def _properties_named(schema: Any, name: str) -> list[dict[str, Any]]:
    """Every schema node declared under the property ``name``, anywhere in ``schema``."""
    found: list[dict[str, Any]] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict) and name in node["properties"]:
                found.append(node["properties"][name])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def test_the_kinds_are_nvcres_and_no_report_export_kind_is_served() -> None:
    assert {k.__name__ for k in KINDS} == NVCRE_KINDS
    assert {yaml.safe_load(p.read_text(encoding="utf-8"))["spec"]["names"]["kind"] for p in Path(CRD_DIR).glob("*.yaml")} == NVCRE_KINDS


@pytest.mark.parametrize("kind", sorted(NVCRE_STATUS))
def test_certification_and_workloadrun_status_add_only_phase_and_observed_generation(kind: str) -> None:
    status = set(_crd_schema(kind)["properties"]["status"]["properties"])
    assert status - NVCRE_STATUS[kind] == OURS_IN_STATUS
    assert NVCRE_STATUS[kind] <= status


def test_applied_overrides_are_strings_and_diagnose_rounds_add_bandwidth_and_nodes() -> None:
    workflow = _crd_schema("Workflow")
    (applied,) = _properties_named(workflow["properties"]["status"], "appliedOverrides")
    item = applied["items"]["properties"]
    assert (item["when"]["type"], item["patches"]["type"]) == ("string", "string")
    groups = [g for h in _properties_named(workflow, "iterationHistory") for g in _properties_named(h, "groups")]
    assert groups and all({"busBandwidthGBps", "nodes"} <= set(g["items"]["properties"]) for g in groups)


def test_node_and_domain_results_follow_the_tracking_switches() -> None:
    workflow = _crd_schema("Workflow")
    (tracking,) = _properties_named(workflow["properties"]["spec"], "tracking")
    assert {"perNode", "perDomain"} <= set(tracking["properties"])
    assert {"nodeResults", "domainResults"} <= set(workflow["properties"]["status"]["properties"])


def test_a_workloadruns_workflow_carries_nvcres_workload_run_label() -> None:
    from nvcre.compiler.workloadrun import render_workloadrun

    document = yaml.safe_load((REPO / "examples" / "workloadrun-torch.yaml").read_text(encoding="utf-8"))
    (workflow,) = render_workloadrun(document, platform="aws", gpu_arch="h100").workflows
    assert workflow["metadata"]["labels"]["nvcre.nvidia.com/workload-run"] == document["metadata"]["name"]


def test_a_workloadruns_default_timeout_per_job_is_24h() -> None:
    from nvcre.compiler.workloadrun import render_workloadrun

    document = yaml.safe_load((REPO / "examples" / "workloadrun-torch.yaml").read_text(encoding="utf-8"))
    document["spec"].get("orchestration", {}).pop("timeoutPerJob", None)
    (workflow,) = render_workloadrun(document, platform="aws", gpu_arch="h100").workflows
    assert workflow["spec"]["orchestration"]["execution"]["timeoutPerJob"] == "24h0m0s"


@pytest.mark.parametrize(
    "command", [["certification", "list-categories"], ["cluster", "info", "--facts", "tests/fixtures/facts/aws-h100-2nodes.yaml"]]
)
def test_an_unknown_output_format_is_refused(command: list[str]) -> None:
    refused = subprocess.run([NVCRECTL, *command, "-o", "tabel"], cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert refused.returncode == 2 and refused.stdout == "" and "tabel" in refused.stderr


def test_list_categories_wide_is_an_extra_table() -> None:
    wide = subprocess.run(
        [NVCRECTL, "certification", "list-categories", "-o", "wide"], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert wide.returncode == 0 and wide.stdout.split()[:3] == ["CATEGORY", "TIMEOUT", "DESCRIPTION"]


def test_a_version_command_stands_beside_the_flag() -> None:
    version = subprocess.run([NVCRECTL, "version"], capture_output=True, text=True, timeout=60, check=False)
    assert version.returncode == 0 and version.stdout.strip()


@pytest.mark.parametrize("kind", ["GoodputMeasurement", "BandwidthMeasurement"])
def test_a_measurement_without_a_job_ref_is_refused_at_the_field(kind: str) -> None:
    spec: dict[str, Any] = {"logProfileRef": {"name": "nccl"}}
    if kind == "BandwidthMeasurement":
        spec["testType"] = "all_reduce"
    document = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": kind, "metadata": {"name": "m", "namespace": "ns"}, "spec": spec}
    problems = [d for d in validate(document) if d.is_error]
    assert any(d.path == "spec.jobRef" for d in problems), [(d.path, d.message) for d in problems]
    spec["jobRef"] = {"name": "j"}
    assert not [d for d in validate(document) if d.is_error and d.path == "spec.jobRef"]


def test_a_failed_jobs_own_nodes_are_in_the_report_before_any_configmap_lists_them() -> None:
    from nvcre.runtime.judge.verdict import certification_verdict
    from nvcre.runtime.report import json as json_report

    kinds: dict[str, list[dict[str, Any]]] = {}
    for doc in yaml.safe_load_all((REPO / "golden" / "report" / "failed-hardware" / "objects.yaml").read_text(encoding="utf-8")):
        kinds.setdefault(doc["kind"], []).append(doc)
    blamed = {n["name"] for job in kinds["Job"] for n in (job.get("status") or {}).get("failedNodes") or []}
    assert blamed, "the case's failed Job blames a node"
    verdict = certification_verdict(kinds["Certification"][0], kinds["Workflow"], kinds["Job"], kinds["GoodputMeasurement"], [])
    assert {d["name"] for d in json_report.to_dict(verdict)["failedNodeDetails"]} == blamed


class _DeletingRun:
    """The client seam over a WorkloadRun being deleted and, optionally, the Workflow it owns."""

    def __init__(self, deleted_at: str, workflow_alive: bool) -> None:
        self.run = {
            "apiVersion": "nvcre.nvidia.com/v1alpha1",
            "kind": "WorkloadRun",
            "metadata": {
                "name": "adhoc",
                "namespace": "ns",
                "uid": "u-run",
                "resourceVersion": "3",
                "finalizers": [WORKLOADRUN_FINALIZER],
                "deletionTimestamp": deleted_at,
            },
            "spec": {},
            "status": {"workflowRef": {"name": "adhoc", "namespace": "ns"}},
        }
        owner = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun", "name": "adhoc", "uid": "u-run", "controller": True}
        self.workflow = (
            {"metadata": {"name": "adhoc", "namespace": "ns", "uid": "u-wf", "ownerReferences": [owner]}} if workflow_alive else None
        )
        self.deleted: list[str] = []
        self.patches: list[dict[str, Any]] = []
        self.events: list[str] = []

    def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        from nvcre.runtime.kube.errors import NotFound

        if resource.kind == "WorkloadRun":
            return self.run
        if resource.kind == "Workflow" and self.workflow is not None:
            return self.workflow
        raise NotFound(404, "NotFound", name)

    def delete(self, resource: Any, name: str, namespace: str | None = None, **_: Any) -> bool:
        self.deleted.append(f"{resource.kind}/{name}")
        return True

    def merge_patch(self, resource: Any, name: str, namespace: str | None, patch: dict[str, Any]) -> dict[str, Any]:
        self.patches.append(patch)
        return self.run

    def emit_event(self, involved: Any, *, type: str, reason: str, message: str, component: str) -> None:
        self.events.append(reason)


def _finalize(kube: _DeletingRun) -> Any:
    from datetime import UTC, datetime

    from nvcre.runtime.clock import Clock
    from nvcre.runtime.kube.informers import Store
    from nvcre.runtime.reconcile.context import Context, Settings
    from nvcre.runtime.reconcile.workloadrun import WorkloadRunReconciler

    class _Clock(Clock):
        def now(self) -> datetime:
            return datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)

    ctx = Context(kube=kube, stores={"nodes": Store()}, clock=_Clock(), settings=Settings())  # type: ignore[arg-type]
    return WorkloadRunReconciler(ctx).reconcile("ns", "adhoc")


def test_the_workloadrun_finalizer_holds_while_its_workflow_is_torn_down_then_says_why_it_let_go() -> None:
    holding = _DeletingRun("2026-03-01T11:59:59Z", workflow_alive=True)
    result = _finalize(holding)
    assert holding.deleted == ["Workflow/adhoc"] and not holding.patches and result.requeue_after
    late = _DeletingRun("2026-03-01T10:00:00Z", workflow_alive=True)
    _finalize(late)
    assert late.events == ["FinalizerTimeout"] and late.patches[0]["metadata"]["finalizers"] == []
    gone = _DeletingRun("2026-03-01T11:59:59Z", workflow_alive=False)
    _finalize(gone)
    assert not gone.deleted and gone.patches[0]["metadata"]["finalizers"] == [] and not gone.events
