"""Offline validation: each CRD rule and schema bound rejects what it should, at the right path."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from nvcre.compiler.api import validate
from nvcre.compiler.api.cel_rules import VALUE_FROM_MESSAGE
from nvcre.compiler.yamlio import load_file

FIXTURES = Path(__file__).parents[2] / "fixtures" / "api"


def load(name: str) -> dict:
    (doc,) = load_file(FIXTURES / name)
    return doc


@pytest.fixture
def cert() -> dict:
    return load("certification-multi-category.yaml")


@pytest.fixture
def run() -> dict:
    return load("workloadrun-mpi-unpinned.yaml")


def found(diagnostics) -> list[tuple[str, str]]:
    return [(d.path, d.code) for d in diagnostics]


def messages_at(diagnostics, path: str) -> list[str]:
    return [d.message for d in diagnostics if d.path == path]


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.yaml")))
def test_valid_fixtures_pass_and_are_not_changed(name):
    doc = load(name)
    snapshot = copy.deepcopy(doc)
    assert validate(doc) == []
    assert validate(doc, old=copy.deepcopy(doc)) == []
    assert doc == snapshot


# --- env -------------------------------------------------------------------------------------


def test_value_from_in_a_category_env_is_rejected_at_its_exact_path(cert):
    cert["spec"]["categories"][0]["options"]["env"][0]["valueFrom"] = {"secretKeyRef": {"name": "s", "key": "k"}}
    diagnostics = validate(cert)
    assert found(diagnostics) == [("spec.categories[0].options.env[0].valueFrom", "FieldForbidden")]
    assert diagnostics[0].message == VALUE_FROM_MESSAGE


def test_value_from_in_the_global_env_is_rejected(cert):
    cert["spec"]["env"][1]["valueFrom"] = {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert found(validate(cert)) == [("spec.env[1].valueFrom", "FieldForbidden")]


def test_value_from_in_a_workloadrun_env_is_rejected(run):
    run["spec"]["env"][0]["valueFrom"] = {}
    assert found(validate(run)) == [("spec.env[0].valueFrom", "FieldForbidden")]


def _env(prefix: str, count: int) -> list[dict]:
    return [{"name": f"{prefix}{i}", "value": "x"} for i in range(count)]


def test_33_env_entries_are_rejected_and_32_accepted(cert):
    del cert["spec"]["categories"][0]["options"]["env"]
    cert["spec"]["env"] = _env("V", 32)
    assert validate(cert) == []
    cert["spec"]["env"] = _env("V", 33)
    assert ("spec.env", "FieldTooMany") in found(validate(cert))
    cert["spec"]["env"] = _env("V", 1)
    cert["spec"]["categories"][1]["options"]["env"] = _env("C", 33)
    assert ("spec.categories[1].options.env", "FieldTooMany") in found(validate(cert))


def test_merged_env_cap_counts_distinct_names_across_global_and_category(cert):
    cert["spec"]["env"] = _env("G", 20)
    cert["spec"]["categories"][0]["options"]["env"] = _env("G", 12) + _env("C", 12)
    assert validate(cert) == []  # 20 global names + 12 new ones
    cert["spec"]["categories"][0]["options"]["env"] = _env("G", 12) + _env("C", 13)
    diagnostics = validate(cert)
    assert found(diagnostics) == [("spec.categories", "FieldInvalid")]
    assert "together name more than 32 variables" in diagnostics[0].message


def test_duplicate_env_names_in_one_list_are_rejected(cert):
    cert["spec"]["env"].append({"name": "NCCL_DEBUG", "value": "WARN"})
    assert found(validate(cert)) == [("spec.env[2]", "FieldDuplicate")]


@pytest.mark.parametrize("name", ["1BAD", "NCCL-DEBUG", "A=B", ""])
def test_env_names_must_be_identifiers(cert, name):
    cert["spec"]["env"].append({"name": name, "value": "x"})
    assert ("spec.env[2].name", "FieldInvalid") in found(validate(cert))


# --- workload labels ---------------------------------------------------------------------------


def _labels(prefix: str, count: int) -> dict[str, str]:
    return {f"{prefix}{i}": "v" for i in range(count)}


def test_33_workload_labels_are_rejected_and_32_accepted(cert):
    del cert["spec"]["categories"][0]["options"]["workloadMetadata"]
    cert["spec"]["workloadMetadata"]["labels"] = _labels("k", 32)
    assert validate(cert) == []
    cert["spec"]["workloadMetadata"]["labels"] = _labels("k", 33)
    diagnostics = validate(cert)
    assert ("spec.workloadMetadata.labels", "FieldTooMany") in found(diagnostics)


def test_merged_label_cap_counts_category_keys_not_in_the_global_labels(cert):
    cert["spec"]["workloadMetadata"]["labels"] = _labels("g", 31)
    assert validate(cert) == []  # 31 global + 1 category key
    cert["spec"]["categories"][0]["options"]["workloadMetadata"]["labels"]["g0"] = "changed"
    assert validate(cert) == []  # an overridden key is not a new one
    cert["spec"]["categories"][0]["options"]["workloadMetadata"]["labels"]["extra"] = "v"
    diagnostics = validate(cert)
    assert found(diagnostics) == [("spec.categories", "FieldInvalid")]
    assert "together hold more than 32 labels" in diagnostics[0].message


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("nvcre.nvidia.com/owner", "reserved prefix"),
        ("app.kubernetes.io/managed-by", "must not be app.kubernetes.io/managed-by"),
        ("bad key", "valid Kubernetes label keys"),
        ("a/b/c", "valid Kubernetes label keys"),
        ("x" * 64, "valid Kubernetes label keys"),
        (("a" * 60 + ".") * 4 + "b" * 20 + "/k", "prefix (before '/') must be at most 253"),
    ],
)
def test_label_key_rules(cert, key, fragment):
    cert["spec"]["workloadMetadata"]["labels"][key] = "v"
    diagnostics = validate(cert)
    assert [d.path for d in diagnostics] == ["spec.workloadMetadata.labels"]
    assert fragment in diagnostics[0].message


def test_label_key_of_63_characters_is_accepted(cert):
    cert["spec"]["workloadMetadata"]["labels"]["example.com/" + "x" * 63] = "v"
    assert validate(cert) == []


@pytest.mark.parametrize("value", ["-bad", "a" * 64, "sp ace"])
def test_label_values_are_checked(cert, value):
    cert["spec"]["categories"][0]["options"]["workloadMetadata"]["labels"]["k"] = value
    assert {d.path for d in validate(cert)} == {"spec.categories[0].options.workloadMetadata.labels.k"}


def test_empty_label_value_is_a_real_label(cert):
    cert["spec"]["workloadMetadata"]["labels"]["flag"] = ""
    assert validate(cert) == []


# --- categories --------------------------------------------------------------------------------


def test_zero_categories_are_rejected(cert):
    cert["spec"]["categories"] = []
    assert found(validate(cert)) == [("spec.categories", "FieldInvalid")]


def test_65_categories_are_rejected_and_64_accepted(cert):
    cert["spec"]["categories"] = [{"domain": "communication", "variant": f"v{i}"} for i in range(64)]
    assert validate(cert) == []
    cert["spec"]["categories"].append({"domain": "communication", "variant": "v64"})
    assert found(validate(cert)) == [("spec.categories", "FieldTooMany")]


def test_an_identical_category_twice_is_rejected(cert):
    cert["spec"]["categories"].append(copy.deepcopy(cert["spec"]["categories"][3]))
    assert found(validate(cert)) == [("spec.categories", "FieldDuplicate")]


def test_the_same_category_with_different_options_is_accepted(cert):
    first, second = cert["spec"]["categories"][:2]
    assert (first["domain"], first["variant"]) == (second["domain"], second["variant"])
    assert validate(cert) == []


def test_category_names_are_dns_labels(cert):
    cert["spec"]["categories"][0]["variant"] = "NCCL_All_Reduce"
    assert found(validate(cert)) == [("spec.categories[0].variant", "FieldInvalid")]


# --- other Certification fields -----------------------------------------------------------------


@pytest.mark.parametrize("url", ["http://git.example.com/x.git", "git://git.example.com/x.git", "file:///repo"])
def test_source_repo_must_be_https_or_ssh(cert, url):
    cert["spec"]["sourceRepo"] = url
    diagnostics = validate(cert)
    assert found(diagnostics) == [("spec.sourceRepo", "FieldInvalid")]
    assert diagnostics[0].message == "sourceRepo must be an https:// or ssh:// URL"


def test_source_repo_per_category_and_over_ssh(cert):
    cert["spec"]["categories"][2]["options"]["sourceRepo"] = "ssh://git@git.example.com/mirrors/Megatron-LM.git"
    assert validate(cert) == []
    cert["spec"]["categories"][2]["options"]["sourceRepo"] = "http://x"
    assert found(validate(cert)) == [("spec.categories[2].options.sourceRepo", "FieldInvalid")]


def test_source_repo_rejects_shell_characters(cert):
    cert["spec"]["sourceRepo"] = "https://git.example.com/x.git;rm -rf /"
    assert found(validate(cert)) == [("spec.sourceRepo", "FieldInvalid")]


def test_unknown_fields_are_rejected(cert):
    cert["spec"]["bogus"] = True
    cert["spec"]["categories"][1]["options"]["placement"] = "Unpinned"  # Certification has no placement
    assert found(validate(cert)) == [
        ("spec.bogus", "FieldUnknown"),
        ("spec.categories[1].options.placement", "FieldUnknown"),
    ]


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("testScale", "huge", "FieldNotSupported"),
        ("rdmaDeviceAccess", "sriov", "FieldNotSupported"),
        ("timeoutPerJob", "1 hour", "FieldInvalid"),
        ("timeoutPerJob", "1.5h", "FieldInvalid"),
        ("dcgmHost", "http://dcgm:5555", "FieldInvalid"),
        ("nodesPerJob", 0, "FieldInvalid"),
        ("mlnxPerNode", -1, "FieldInvalid"),
        ("maxSteps", -2, "FieldInvalid"),
        ("maxBytes", "16GB", "FieldInvalid"),
        ("storageSize", "10TB", "FieldInvalid"),
        ("image", "", "FieldInvalid"),
        ("gpusPerNode", "8", "FieldTypeInvalid"),
        ("enableMNNVL", "true", "FieldTypeInvalid"),
    ],
)
def test_option_bounds_enums_and_patterns(cert, field, value, code):
    cert["spec"][field] = value
    assert found(validate(cert)) == [(f"spec.{field}", code)]


@pytest.mark.parametrize("timeout", ["1h", "90m", "24h", "1h30m", "500ms", "1h0m0s"])
def test_go_durations_are_accepted(cert, timeout):
    cert["spec"]["timeoutPerJob"] = timeout
    assert validate(cert) == []


def test_target_is_required_and_empty_target_means_all_nodes(cert):
    cert["spec"]["target"] = {}
    assert validate(cert) == []
    del cert["spec"]["target"]
    assert found(validate(cert)) == [("spec.target", "FieldRequired")]


def test_taint_selector_effect_enum(cert):
    cert["spec"]["target"]["taintSelectors"][0]["effect"] = "Sometimes"
    assert found(validate(cert)) == [("spec.target.taintSelectors[0].effect", "FieldNotSupported")]


@pytest.mark.parametrize(
    ("queue_label_key", "fragment"),
    [
        ("nvcre.nvidia.com/queue", "reserved prefix"),
        ("app.kubernetes.io/managed-by", "must not be app.kubernetes.io/managed-by"),
        (("a" * 60 + ".") * 4 + "b" * 20 + "/q", "at most 253"),
    ],
)
def test_queue_label_key_rules(cert, queue_label_key, fragment):
    cert["spec"]["gangScheduler"]["queueLabelKey"] = queue_label_key
    diagnostics = validate(cert)
    assert [d.path for d in diagnostics] == ["spec.gangScheduler.queueLabelKey"]
    assert fragment in diagnostics[0].message


def test_gang_scheduler_needs_a_scheduler_name(cert):
    del cert["spec"]["gangScheduler"]["schedulerName"]
    assert found(validate(cert)) == [("spec.gangScheduler.schedulerName", "FieldRequired")]
    cert["spec"]["gangScheduler"]["schedulerName"] = ""
    assert found(validate(cert)) == [("spec.gangScheduler.schedulerName", "FieldInvalid")]


@pytest.mark.parametrize("name", ["example.kubernetes.io/nic", "k8s.io/nic", "rdma.k8s.io/nic", "kubernetes.io/nic"])
def test_nic_resource_name_rejects_kubernetes_domains(cert, name):
    cert["spec"]["nicResourceName"] = name
    assert ("spec.nicResourceName", "FieldInvalid") in found(validate(cert))


def test_nic_resource_name_needs_a_domain(cert):
    cert["spec"]["nicResourceName"] = "mlnxnics"
    assert found(validate(cert)) == [("spec.nicResourceName", "FieldInvalid")]


def test_threshold_keys_are_known_metrics(cert):
    cert["spec"]["categories"][0]["options"]["thresholds"]["busBandwidth"] = "value > 1"
    diagnostics = validate(cert)
    assert found(diagnostics) == [("spec.categories[0].options.thresholds", "FieldInvalid")]
    assert "unknown threshold metric" in diagnostics[0].message


@pytest.mark.parametrize(
    ("side", "resource", "value", "message"),
    [
        ("requests", "cpu", "256", "requests.cpu must not exceed limits.cpu"),
        ("requests", "memory", "1Ti", "requests.memory must not exceed limits.memory"),
        ("limits", "cpu", "-1", "must be a non-negative quantity"),
    ],
)
def test_resource_quantity_rules(cert, side, resource, value, message):
    cert["spec"]["categories"][2]["options"]["resources"][side][resource] = value
    assert message in [d.message for d in validate(cert)]


def test_requests_may_equal_limits_in_other_units(cert):
    resources = cert["spec"]["categories"][2]["options"]["resources"]
    resources["requests"] = {"cpu": "128000m", "memory": "800Gi"}
    assert validate(cert) == []


def test_quantities_must_be_quantities(cert):
    cert["spec"]["categories"][2]["options"]["resources"]["limits"]["memory"] = "lots"
    assert found(validate(cert)) == [("spec.categories[2].options.resources.limits.memory", "FieldInvalid")]


# --- immutability ------------------------------------------------------------------------------


def test_certification_spec_is_immutable(cert):
    old = copy.deepcopy(cert)
    cert["spec"]["nodesPerJob"] = 3
    diagnostics = validate(cert, old=old)
    assert found(diagnostics) == [("spec", "FieldInvalid")]
    assert diagnostics[0].message == "spec is immutable after creation"
    assert validate(cert) == []  # without an old object there is no transition to check


def test_status_and_metadata_may_change_on_update():
    old = load("certification-with-status.yaml")
    new = copy.deepcopy(old)
    new["status"]["phase"] = "Succeeded"
    new["metadata"]["labels"] = {"reviewed": "yes"}
    assert validate(new, old=old) == []


def test_workloadrun_spec_is_immutable_and_defaults_do_not_count_as_changes(run):
    old = copy.deepcopy(run)
    run["spec"]["framework"]["mpi"]["mpiImplementation"] = "OpenMPI"  # the CRD default, written out
    assert validate(run, old=old) == []
    run["spec"]["numNodes"] = 8
    assert found(validate(run, old=old)) == [("spec", "FieldInvalid")]


def test_old_object_of_another_kind_is_reported(cert, run):
    assert ("", "OldObjectInvalid") in found(validate(cert, old=run))


# --- WorkloadRun -------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", ["intra-node", "intra-rack"])
def test_unpinned_placement_rejects_node_and_rack_scales(run, scale):
    run["spec"]["orchestration"]["testScale"] = scale
    diagnostics = validate(run)
    assert found(diagnostics) == [("spec.orchestration.placement", "FieldInvalid")]
    assert "Unpinned cannot be combined" in diagnostics[0].message


def test_pinned_placement_allows_node_scale_and_unpinned_allows_full_scale(run):
    assert run["spec"]["orchestration"] == {"testScale": "full-scale", "placement": "Unpinned", "timeoutPerJob": "1h"}
    assert validate(run) == []
    run["spec"]["orchestration"].update(testScale="intra-node", placement="Pinned")
    assert validate(run) == []
    del run["spec"]["orchestration"]["placement"]
    assert validate(run) == []


def test_workloadrun_has_no_diagnose_scale(run):
    run["spec"]["orchestration"]["testScale"] = "diagnose"
    assert found(validate(run)) == [("spec.orchestration.testScale", "FieldNotSupported")]


@pytest.mark.parametrize(
    ("framework", "path", "message"),
    [
        ({}, "spec.framework", "exactly one of torch, mpi or exec must be set"),
        ({"torch": {"script": "a.py"}, "exec": {"command": ["true"]}}, "spec.framework", "exactly one of torch, mpi or exec must be set"),
        ({"torch": {"script": "a.py", "module": "m"}}, "spec.framework.torch", "script and module are mutually exclusive"),
        ({"torch": {"args": ["x"]}}, "spec.framework.torch", "either script or module must be set"),
        ({"exec": {"command": []}}, "spec.framework.exec.command", "should have at least 1 items"),
        ({"mpi": {"binary": "/bin/x"}}, "spec.framework.mpi.mpirunPath", "Required value"),
    ],
)
def test_framework_rules(run, framework, path, message):
    run["spec"]["framework"] = framework
    assert [(d.path, d.message) for d in validate(run)] == [(path, message)]


def test_config_is_inline_or_a_config_map(run):
    run["spec"]["config"]["configMapRef"] = {"name": "settings"}
    assert [(d.path, d.message) for d in validate(run)] == [("spec.config", "inline and configMapRef are mutually exclusive")]


def test_workloadrun_required_fields(run):
    for field in ("image", "numNodes", "framework"):
        del run["spec"][field]
    assert found(validate(run)) == [
        ("spec.framework", "FieldRequired"),
        ("spec.image", "FieldRequired"),
        ("spec.numNodes", "FieldRequired"),
    ]


def test_volumes_keep_unknown_fields_but_need_a_name(run):
    run["spec"]["volumes"].append({"persistentVolumeClaim": {"claimName": "data"}})
    assert found(validate(run)) == [("spec.volumes[1].name", "FieldRequired")]


# --- Workflow and Job --------------------------------------------------------------------------


def test_workflow_gang_scheduler_is_immutable_and_cannot_come_or_go():
    old = load("workflow-overrides.yaml")
    changed = copy.deepcopy(old)
    changed["spec"]["gangScheduler"]["queue"] = "other"
    assert [(d.path, d.message) for d in validate(changed, old=old)] == [("spec.gangScheduler", "gangScheduler is immutable")]
    removed = copy.deepcopy(old)
    del removed["spec"]["gangScheduler"]
    assert [(d.path, d.message) for d in validate(removed, old=old)] == [
        ("spec", "gangScheduler cannot be added or removed after creation")
    ]
    assert [d.path for d in validate(old, old=removed)] == ["spec"]


def test_workflow_overrides_stay_editable_but_the_job_template_workload_does_not():
    old = load("workflow-overrides.yaml")
    new = copy.deepcopy(old)
    new["spec"]["overrides"].pop()
    assert validate(new, old=old) == []
    new["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]["numNodes"] = 4
    assert [(d.path, d.message) for d in validate(new, old=old)] == [("spec.jobTemplate.spec.workload", "workload is immutable")]


def test_workflow_dependencies_are_embedded_objects():
    doc = load("workflow-overrides.yaml")
    del doc["spec"]["dependencies"][0]["kind"]
    assert found(validate(doc)) == [("spec.dependencies[0].kind", "FieldRequired")]


def test_job_immutable_fields_cannot_be_added_changed_or_removed():
    old = load("job-with-status.yaml")
    added = copy.deepcopy(old)
    added["spec"]["workloadMetadata"] = {"labels": {"a": "b"}}
    assert [(d.path, d.message) for d in validate(added, old=old)] == [
        ("spec", "workloadMetadata cannot be added or removed after creation")
    ]
    changed = copy.deepcopy(old)
    changed["spec"]["bandwidthMeasurement"]["testType"] = "alltoall"
    assert [(d.path, d.message) for d in validate(changed, old=old)] == [("spec.bandwidthMeasurement", "bandwidthMeasurement is immutable")]
    editable = copy.deepcopy(old)
    editable["spec"]["thresholds"]["busBandwidthGBps"] = "value >= 1"
    assert validate(editable, old=old) == []


def test_job_failed_nodes_are_unique_per_name_and_reason():
    doc = load("job-with-status.yaml")
    doc["status"]["failedNodes"].append({"name": "node-b", "reason": "WorkloadFailed", "message": "again"})
    assert found(validate(doc)) == [("status.failedNodes[2]", "FieldDuplicate")]
    doc["status"]["failedNodes"][2]["reason"] = "Flaky"
    assert found(validate(doc)) == [("status.failedNodes[2].reason", "FieldNotSupported")]


def test_condition_shape():
    doc = load("certification-with-status.yaml")
    doc["status"]["conditions"][0]["lastTransitionTime"] = "yesterday"
    doc["status"]["conditions"][1]["status"] = "Maybe"
    del doc["status"]["conditions"][1]["reason"]
    assert found(validate(doc)) == [
        ("status.conditions[0].lastTransitionTime", "FieldInvalid"),
        ("status.conditions[1].reason", "FieldRequired"),
        ("status.conditions[1].status", "FieldNotSupported"),
    ]


# --- measurements and LogProfile ---------------------------------------------------------------


def test_bandwidth_transport_is_an_open_set_of_names():
    # Record-only: any network NCCL names (IB, Socket, Libfabric, ...) is kept, each once.
    doc = load("bandwidthmeasurement-with-status.yaml")
    doc["status"]["transport"] = ["IB", "Socket", "Libfabric"]
    assert validate(doc) == []
    doc["status"]["transport"] = ["IB", "IB", ""]
    assert found(validate(doc)) == [("status.transport[1]", "FieldDuplicate"), ("status.transport[2]", "FieldInvalid")]


def test_logprofile_is_cluster_scoped():
    doc = load("logprofile-nccl-bandwidth.yaml")
    doc["metadata"]["namespace"] = "default"
    assert found(validate(doc)) == [("metadata.namespace", "FieldForbidden")]


def test_logprofile_enums():
    doc = load("logprofile-nccl-bandwidth.yaml")
    doc["spec"]["workerStrategy"]["type"] = "All"
    doc["spec"]["patterns"]["trainingStep"]["units"]["elapsedTime"] = "min"
    assert found(validate(doc)) == [
        ("spec.patterns.trainingStep.units.elapsedTime", "FieldNotSupported"),
        ("spec.workerStrategy.type", "FieldNotSupported"),
    ]


# --- metadata, reporting -----------------------------------------------------------------------


def test_metadata_name_is_required_and_must_be_a_dns_subdomain(cert):
    cert["metadata"]["name"] = "Bad_Name"
    assert found(validate(cert)) == [("metadata.name", "FieldInvalid")]
    del cert["metadata"]["name"]
    assert found(validate(cert)) == [("metadata.name", "FieldRequired")]
    cert["metadata"]["generateName"] = "burn-in-"
    assert validate(cert) == []


def test_a_bad_certification_reports_every_problem_sorted_by_path(cert):
    spec = cert["spec"]
    spec["sourceRepo"] = "http://git.example.com/x.git"
    spec["bogus"] = 1
    spec["workloadMetadata"]["labels"] = _labels("k", 33)
    spec["categories"][0]["options"]["env"][0]["valueFrom"] = {"secretKeyRef": {"name": "s", "key": "k"}}
    spec["categories"][2]["options"]["resources"]["requests"]["cpu"] = "256"
    spec["categories"][3]["options"]["dcgmHost"] = "not a host"
    spec["gangScheduler"]["queueLabelKey"] = "nvcre.nvidia.com/queue"
    spec["categories"].append(copy.deepcopy(spec["categories"][1]))
    cert["metadata"]["name"] = "Bad"
    assert found(validate(cert)) == [
        ("metadata.name", "FieldInvalid"),
        ("spec.bogus", "FieldUnknown"),
        ("spec.categories", "FieldDuplicate"),
        # no merged-label-cap error: 33 global labels are already too many, and rules over a node
        # with a value of the wrong shape below it are not run
        ("spec.categories[0].options.env[0].valueFrom", "FieldForbidden"),
        ("spec.categories[2].options.resources", "FieldInvalid"),
        ("spec.categories[3].options.dcgmHost", "FieldInvalid"),
        ("spec.gangScheduler.queueLabelKey", "FieldInvalid"),
        ("spec.sourceRepo", "FieldInvalid"),
        ("spec.workloadMetadata.labels", "FieldTooMany"),
    ]


def test_paths_sort_indexes_as_numbers(cert):
    cert["spec"]["categories"] = [{"domain": "communication", "variant": f"v{i}"} for i in range(12)]
    for index in (2, 10):
        cert["spec"]["categories"][index]["variant"] = f"Bad_{index}"
    assert [d.path for d in validate(cert)] == ["spec.categories[2].variant", "spec.categories[10].variant"]


def test_null_required_field_is_reported_once(cert):
    cert["spec"]["categories"][0]["domain"] = None
    assert found(validate(cert)) == [("spec.categories[0].domain", "FieldRequired")]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.update(spec=[]), [("spec", "FieldTypeInvalid")]),
        (lambda d: d["spec"].update(categories={"a": 1}), [("spec.categories", "FieldTypeInvalid")]),
        (lambda d: d["spec"].update(env=["A=1"]), [("spec.env[0]", "FieldTypeInvalid")]),
        (lambda d: d["spec"]["env"].append(None), [("spec.env[2]", "FieldTypeInvalid")]),
        (lambda d: d["spec"]["workloadMetadata"].update(labels=["a"]), [("spec.workloadMetadata.labels", "FieldTypeInvalid")]),
        (lambda d: d["spec"]["workloadMetadata"].update(labels={1: "a"}), [("spec.workloadMetadata.labels.1", "FieldTypeInvalid")]),
        (lambda d: d.update(metadata="x"), [("metadata", "FieldTypeInvalid")]),
        (lambda d: d.pop("metadata"), [("metadata", "FieldRequired")]),
        (lambda d: d["spec"]["categories"][0].update(options=None), []),
    ],
)
def test_misshapen_documents_give_one_diagnostic_per_problem(cert, change, expected):
    change(cert)
    assert found(validate(cert)) == expected
