"""`setup render` and nvcre.compiler.install: values to the controller's install objects."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.compiler.api.crdgen import CRD_DIR
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.install import DEFAULT_VALUES, merge_values, parse_set, render_install
from nvcre.compiler.yamlio import load_documents

REPO = Path(__file__).resolve().parents[3]


def setup(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nvcre.cli.setup", "render", *args], cwd=REPO, capture_output=True, text=True, timeout=120, input=stdin
    )


def by_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def deployment(objects: list[dict]) -> dict:
    (found,) = by_kind(objects, "Deployment")
    return found


def test_default_install_in_apply_order() -> None:
    objects = render_install().objects
    kinds = [o["kind"] for o in objects]
    assert kinds.index("Namespace") > max(i for i, k in enumerate(kinds) if k == "CustomResourceDefinition")
    assert kinds[-6:] == ["ServiceAccount", "Deployment", "Service", "ServiceMonitor", "PrometheusRule", "ConfigMap"]
    committed = sorted(load_documents(p.read_text())[0]["metadata"]["name"] for p in CRD_DIR.glob("*.yaml"))
    assert sorted(o["metadata"]["name"] for o in by_kind(objects, "CustomResourceDefinition")) == committed
    assert {o["metadata"]["name"] for o in by_kind(objects, "ClusterRole")} == {
        "nvcre-manager-role",
        "nvcre-run-role",
        "nvcre-metrics-reader",
        "nvcre-metrics-auth-role",
    }
    first_binding = min(i for i, k in enumerate(kinds) if k in ("ClusterRoleBinding", "RoleBinding"))
    assert max(i for i, k in enumerate(kinds) if k in ("ClusterRole", "Role")) < first_binding
    (run_binding,) = [o for o in by_kind(objects, "ClusterRoleBinding") if o["metadata"]["name"] == "nvcre-manager-run"]
    assert run_binding["roleRef"]["name"] == "nvcre-run-role"
    assert run_binding["subjects"] == [{"kind": "ServiceAccount", "name": "nvcre-manager", "namespace": "nvcre"}]
    assert not [o for o in by_kind(objects, "RoleBinding") if o["metadata"]["name"] == "nvcre-manager-run"]


def test_namespaced_scope_binds_the_run_role_in_each_run_namespace_only() -> None:
    objects = render_install([{"rbac": {"scope": "namespaced", "runNamespaces": ["team-a", "team-b"]}}]).objects
    runs = [o for o in by_kind(objects, "RoleBinding") if o["metadata"]["name"] == "nvcre-manager-run"]
    assert [o["metadata"]["namespace"] for o in runs] == ["team-a", "team-b"]
    assert all(o["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "nvcre-run-role"} for o in runs)
    assert "nvcre-manager-run" not in {o["metadata"]["name"] for o in by_kind(objects, "ClusterRoleBinding")}
    from nvcre.compiler.compose import run_access_binding  # what `rbac print` prints, labels aside

    expected = run_access_binding("team-a", managed_by=None)
    assert {k: v for k, v in runs[0].items() if k != "metadata"} == {k: v for k, v in expected.items() if k != "metadata"}


def test_rbac_is_least_privilege() -> None:
    objects = render_install().objects
    rules = [rule for o in objects if o["kind"] in ("ClusterRole", "Role") for rule in o["rules"]]
    urls = [rule for rule in rules if "nonResourceURLs" in rule]
    assert urls == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}], "only the metrics reader names a URL"
    rules = [rule for rule in rules if "nonResourceURLs" not in rule]
    everything = {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    assert not [e for e in everything if "*" in e]
    assert not [e for e in everything if e[1] in ("secrets", "roles", "clusterroles", "rolebindings", "clusterrolebindings")]
    assert not [e for e in everything if e[2] in ("escalate", "bind", "impersonate")]
    manager = next(o for o in objects if o["metadata"]["name"] == "nvcre-manager-role")["rules"]
    manager_access = {(g, r, v) for rule in manager for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    assert ("", "nodes", "patch") not in manager_access and ("", "nodes", "update") not in manager_access  # never changes a node
    assert ("nvcre.nvidia.com", "logprofiles", "get") in manager_access
    assert ("nvcre.nvidia.com", "logprofiles", "create") not in manager_access
    assert ("authorization.k8s.io", "selfsubjectaccessreviews", "create") in manager_access
    run = next(o for o in objects if o["metadata"]["name"] == "nvcre-run-role")["rules"]
    run_access = {(g, r, v) for rule in run for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    assert ("", "pods/log", "get") in run_access and ("trainer.kubeflow.org", "trainjobs", "create") in run_access


def test_the_controller_runs_non_root_on_a_read_only_root_filesystem() -> None:
    from nvcre.runtime.main import _parser

    deploy = deployment(render_install().objects)
    pod = deploy["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["python", "-m", "nvcre.runtime"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    args = _parser().parse_args(container["args"])  # every flag is one the controller accepts
    assert (args.lease_namespace, args.leader_elect, args.health_probe_bind_address) == ("nvcre", True, "0.0.0.0:8081")
    assert pod["serviceAccountName"] == "nvcre-manager"
    assert deploy["spec"]["selector"]["matchLabels"].items() <= deploy["spec"]["template"]["metadata"]["labels"].items()


def test_a_digest_pins_the_image_and_pull_secrets_render_by_name() -> None:
    digest = "sha256:" + "a" * 64
    objects = render_install(
        [{"manager": {"image": {"repository": "registry.example.com/nvcre/manager", "digest": digest}, "imagePullSecrets": ["regcred"]}}]
    ).objects
    pod = deployment(objects)["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == f"registry.example.com/nvcre/manager@{digest}"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]


def test_optional_parts_can_be_left_out() -> None:
    objects = render_install([{"crds": {"install": False}, "logProfiles": {"install": False}, "namespace": {"create": False}}]).objects
    assert not {"CustomResourceDefinition", "LogProfile", "Namespace"} & {o["kind"] for o in objects}


def test_builtin_logprofiles_are_part_of_the_install() -> None:
    logprofiles = pytest.importorskip("nvcre.compiler.logprofiles")
    objects = render_install().objects
    assert [o["metadata"]["name"] for o in by_kind(objects, "LogProfile")] == [
        p["metadata"]["name"] for p in logprofiles.builtin_logprofiles()
    ]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a.b=c", {"a": {"b": "c"}}),
        ("a=1,b=true,c=null,d=01", {"a": 1, "b": True, "c": None, "d": "01"}),
        ("list={x,y}", {"list": ["x", "y"]}),
        ("list[1]=y", {"list": [None, "y"]}),
        (r"key\.with\.dots=v\,w", {"key.with.dots": "v,w"}),
        ("a.b[0].c=d", {"a": {"b": [{"c": "d"}]}}),
    ],
)
def test_set_follows_helm_syntax(expression: str, expected: dict) -> None:
    assert parse_set(expression) == expected


def test_values_merge_like_helm() -> None:
    merged = merge_values(DEFAULT_VALUES, {"manager": {"replicas": 2, "resources": None}, "rbac": {"runNamespaces": ["x"]}})
    assert merged["manager"]["replicas"] == 2 and "resources" not in merged["manager"]
    assert merged["manager"]["image"] == DEFAULT_VALUES["manager"]["image"]
    assert DEFAULT_VALUES["manager"]["replicas"] == 1  # the defaults are not changed


def test_bad_values_report_every_path() -> None:
    with pytest.raises(CompileError) as exc:
        render_install(
            [
                {
                    "rbac": {"scope": "everywhere", "runNamespaces": ["Team_A", "b", "b"]},
                    "manager": {
                        "image": {"digest": "sha256:short"},
                        "replicas": 2,
                        "leaderElection": False,
                        "namespaceAccessTimeout": "ten minutes",
                    },
                }
            ]
        )
    paths = {d.path for d in exc.value.errors}
    assert paths == {
        "rbac.scope",
        "rbac.runNamespaces[0]",
        "rbac.runNamespaces[2]",
        "manager.image.digest",
        "manager.replicas",
        "manager.namespaceAccessTimeout",
    }
    with pytest.raises(CompileError) as exc:
        render_install([{"rbac": {"scoop": "cluster"}, "manager": {"replicas": "2"}}])
    assert {d.path for d in exc.value.errors} == {"rbac.scoop", "manager.replicas"}


def test_cli_files_then_sets_and_byte_stable_output(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("rbac:\n  scope: namespaced\n  runNamespaces: [team-a]\nmanager:\n  replicas: 2\n")
    first = setup("-f", str(values), "--set", "manager.replicas=3")
    assert first.returncode == 0, first.stderr
    docs = load_documents(first.stdout)
    assert deployment(docs)["spec"]["replicas"] == 3
    assert [d["metadata"]["namespace"] for d in docs if d["metadata"]["name"] == "nvcre-manager-run"] == ["team-a"]
    assert setup("-f", str(values), "--set", "manager.replicas=3").stdout == first.stdout
    from_stdin = setup("-f", "-", "--set", "manager.replicas=3", stdin=values.read_text())
    assert from_stdin.stdout == first.stdout


def test_cli_errors_exit_2_with_the_field_path(tmp_path: Path) -> None:
    bad = setup("--set", "rbac.scope=everywhere")
    assert bad.returncode == 2 and bad.stdout == "" and "rbac.scope" in bad.stderr and "Traceback" not in bad.stderr
    url = setup("-f", "https://example.com/values.yaml")
    assert url.returncode == 2 and "URLs are not fetched" in url.stderr
    syntax = setup("--set", "novalue")
    assert syntax.returncode == 2 and "expected key=value" in syntax.stderr


def test_set_json_comes_after_set_and_reports_bad_json() -> None:
    done = setup(
        "--set",
        "manager.workers=3",
        "--set-json",
        'manager.tolerations=[{"key":"gpu","operator":"Exists"}]',
        "--set-json",
        "manager.workers=5",
    )
    assert done.returncode == 0, done.stderr
    pod = deployment(load_documents(done.stdout))["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert "--workers=5" in pod["containers"][0]["args"]
    bad = setup("--set-json", "manager.tolerations=[oops")
    assert bad.returncode == 2 and "not JSON" in bad.stderr and bad.stdout == ""


def test_a_trailing_newline_does_not_pass_a_name_rule() -> None:
    with pytest.raises(CompileError) as exc:
        render_install([{"namespace": {"name": "team-a\n"}, "rbac": {"scope": "namespaced", "runNamespaces": ["b\n"]}}])
    assert {d.path for d in exc.value.errors} == {"namespace.name", "rbac.runNamespaces[0]"}


def test_null_restores_a_model_default_but_removes_a_pass_through_entry() -> None:
    objects = render_install([{"manager": {"replicas": None, "resources": {"limits": None}, "image": {"tag": None}}}]).objects
    deploy = deployment(objects)
    assert deploy["spec"]["replicas"] == 1
    assert deploy["spec"]["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}}
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":" + DEFAULT_VALUES["manager"]["image"]["tag"])
    whole = deployment(render_install([{"manager": {"resources": None}}]).objects)
    assert whole["spec"]["template"]["spec"]["containers"][0]["resources"] == DEFAULT_VALUES["manager"]["resources"]


def test_metrics_are_https_with_reviewed_tokens_and_prometheus_finds_them() -> None:
    from nvcre.compiler.install.monitoring import alert_rule_groups
    from nvcre.runtime.main import _parser

    objects = render_install().objects
    (container,) = deployment(objects)["spec"]["template"]["spec"]["containers"]
    args = _parser().parse_args(container["args"])
    assert (args.metrics_bind_address, args.metrics_secure, args.metrics_cert_path) == ("0.0.0.0:8443", True, "")
    assert {"name": "metrics", "containerPort": 8443, "protocol": "TCP"} in container["ports"]
    (service,) = by_kind(objects, "Service")
    assert service["metadata"]["name"] == "nvcre-metrics-service"
    assert service["spec"]["ports"] == [{"name": "https", "port": 8443, "protocol": "TCP", "targetPort": "metrics"}]
    assert service["spec"]["selector"].items() <= deployment(objects)["spec"]["template"]["metadata"]["labels"].items()
    (monitor,) = by_kind(objects, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1" and monitor["metadata"]["namespace"] == "nvcre"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["selector"]["matchLabels"]["control-plane"] == "manager"
    assert monitor["spec"]["endpoints"] == [
        {
            "path": "/metrics",
            "port": "https",
            "scheme": "https",
            "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
            "honorLabels": True,
            "tlsConfig": {"insecureSkipVerify": True},
        }
    ]
    (rule,) = by_kind(objects, "PrometheusRule")
    assert rule["spec"]["groups"] == alert_rule_groups()


def test_the_metrics_roles_are_least_privilege_and_the_reader_is_left_unbound() -> None:
    objects = render_install([{"serviceAccount": {"name": "ctl"}, "namespace": {"name": "gpu-cert"}}]).objects
    roles = {o["metadata"]["name"]: o["rules"] for o in by_kind(objects, "ClusterRole")}
    assert roles["nvcre-metrics-reader"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert roles["nvcre-metrics-auth-role"] == [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
    ]
    bindings = by_kind(objects, "ClusterRoleBinding") + by_kind(objects, "RoleBinding")
    (auth,) = [b for b in bindings if b["roleRef"]["name"] == "nvcre-metrics-auth-role"]
    assert auth["subjects"] == [{"kind": "ServiceAccount", "name": "ctl", "namespace": "gpu-cert"}]
    assert not [b for b in bindings if b["roleRef"]["name"] == "nvcre-metrics-reader"], "a Prometheus binds the reader, not the install"


def test_the_service_monitor_rules_and_dashboard_can_be_turned_off() -> None:
    off = {"serviceMonitor": {"enabled": False}, "prometheusRule": {"enabled": False}, "grafanaDashboard": {"enabled": False}}
    objects = render_install([{"metrics": off}]).objects
    kinds = {o["kind"] for o in objects}
    assert "Service" in kinds and not {"ServiceMonitor", "PrometheusRule", "ConfigMap"} & kinds
    with pytest.raises(CompileError, match="metrics.serviceMonitor.enabled"):
        render_install([{"metrics": {"serviceMonitor": {"enabled": "no"}}}])


def test_an_own_metrics_certificate_is_mounted_served_and_verified() -> None:
    from nvcre.compiler.install.manager import METRICS_CERT_DIR
    from nvcre.runtime.main import _parser

    objects = render_install([{"metrics": {"certSecret": "nvcre-metrics-cert"}, "namespace": {"name": "gpu-cert"}}]).objects
    pod = deployment(objects)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert _parser().parse_args(container["args"]).metrics_cert_path == METRICS_CERT_DIR
    assert {"name": "metrics-certs", "mountPath": METRICS_CERT_DIR, "readOnly": True} in container["volumeMounts"]
    assert {"name": "metrics-certs", "secret": {"secretName": "nvcre-metrics-cert"}} in pod["volumes"]
    (monitor,) = by_kind(objects, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["tlsConfig"] == {
        "ca": {"secret": {"name": "nvcre-metrics-cert", "key": "ca.crt"}},
        "serverName": "nvcre-metrics-service.gpu-cert.svc",
    }
    # without one: no mount, no flag, and the self-signed certificate is not verified
    default = deployment(render_install().objects)["spec"]["template"]["spec"]
    assert [v["name"] for v in default["volumes"]] == ["tmp"]
    assert not [a for a in default["containers"][0]["args"] if a.startswith("--metrics-cert-path")]


def test_selector_labels_go_on_the_service_monitor_and_the_rule_only() -> None:
    layer = {
        "metrics": {"serviceMonitor": {"labels": {"release": "kps"}}, "prometheusRule": {"labels": {"release": "kps", "role": "alerts"}}}
    }
    objects = render_install([layer]).objects
    (monitor,) = by_kind(objects, "ServiceMonitor")
    (rule,) = by_kind(objects, "PrometheusRule")
    assert monitor["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "nvcrectl",
        "app.kubernetes.io/part-of": "nvcre",
        "release": "kps",
    }
    assert rule["metadata"]["labels"]["role"] == "alerts" and rule["metadata"]["labels"]["release"] == "kps"
    assert not [
        o for o in objects if o["kind"] not in ("ServiceMonitor", "PrometheusRule") and "release" in o["metadata"].get("labels", {})
    ]
    # the install's own labels win over a value that names them
    clash = {"metrics": {"serviceMonitor": {"labels": {"app.kubernetes.io/part-of": "other"}}}}
    (monitor,) = by_kind(render_install([clash]).objects, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["app.kubernetes.io/part-of"] == "nvcre"


@pytest.mark.parametrize(
    ("layer", "path"),
    [
        ({"metrics": {"certSecret": "Bad_Name"}}, "metrics.certSecret"),
        ({"metrics": {"serviceMonitor": {"labels": {"release": 1}}}}, "metrics.serviceMonitor.labels.release"),
        ({"metrics": {"prometheusRule": {"labels": {"bad key!": "x"}}}}, "metrics.prometheusRule.labels.bad key!"),
        ({"metrics": {"serviceMonitor": {"labels": ["release=kps"]}}}, "metrics.serviceMonitor.labels"),
    ],
)
def test_bad_certificate_secret_or_labels_are_refused_by_path(layer: dict, path: str) -> None:
    with pytest.raises(CompileError, match=re.escape(path)):
        render_install([layer])
