"""What Prometheus needs to find, read and judge the controller: its metrics Service, a
ServiceMonitor, the shipped alert rules as a PrometheusRule, and the RBAC of the secured endpoint;
and, for Grafana, the burn-in dashboard as a ConfigMap.

The controller serves ``/metrics`` over HTTPS and asks the API server about every scrape's bearer
token (TokenReview, then a SubjectAccessReview for ``get`` on the non-resource URL ``/metrics``),
so it needs ``nvcre-metrics-auth-role``; a scraper needs ``nvcre-metrics-reader``, which the
install defines and leaves for the Prometheus operator to bind. The ServiceMonitor follows the
usual controller scaffold (the scraper's own ServiceAccount token, a self-signed certificate not
verified) and honours the exported labels, because the controller's ``job`` label names the
nvcre Job. The alert rules live in ``alert_rules.yaml`` next to this module: the PrometheusRule
carries its groups unchanged, and the tests run promtool on that very file. The dashboard lives in
``dashboard.json`` next to it (a Grafana dashboard JSON model): the ConfigMap carries its bytes
unchanged under the label Grafana's dashboard sidecar looks for (``grafana_dashboard: "1"``).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from .manager import METRICS_PORT

__all__ = [
    "ALERT_RULES_FILE",
    "DASHBOARD_CONFIGMAP",
    "DASHBOARD_FILE",
    "DASHBOARD_KEY",
    "DASHBOARD_LABELS",
    "METRICS_AUTH_ROLE",
    "METRICS_READER_ROLE",
    "METRICS_SERVICE",
    "SERVICE_LABELS",
    "alert_rule_groups",
    "dashboard_text",
    "metrics_rbac_objects",
    "monitoring_objects",
]

ALERT_RULES_FILE = Path(__file__).with_name("alert_rules.yaml")
METRICS_SERVICE = "nvcre-metrics-service"
SERVICE_MONITOR = "nvcre-metrics-monitor"
PROMETHEUS_RULE = "nvcre-alerts"
DASHBOARD_FILE = Path(__file__).with_name("dashboard.json")
DASHBOARD_CONFIGMAP = "nvcre-grafana-dashboard"
#: The ConfigMap's data key: the sidecar writes the dashboard to a file of this name.
DASHBOARD_KEY = "nvcre-burn-in.json"
#: The label Grafana's dashboard sidecar selects ConfigMaps by (kube-prometheus-stack's default).
DASHBOARD_LABELS = {"grafana_dashboard": "1"}
METRICS_READER_ROLE = "nvcre-metrics-reader"
METRICS_AUTH_ROLE = "nvcre-metrics-auth-role"
#: The labels the ServiceMonitor selects the Service by (``control-plane: manager`` as NVCRE's monitor selects).
SERVICE_LABELS = {"control-plane": "manager", "app.kubernetes.io/name": "nvcre"}
_POD_SELECTOR = {"app.kubernetes.io/name": "nvcre", "app.kubernetes.io/component": "manager"}
_TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"


@cache
def _rules_text() -> str:
    return ALERT_RULES_FILE.read_text(encoding="utf-8")


@cache
def dashboard_text() -> str:
    """The dashboard JSON exactly as ``dashboard.json`` holds it."""
    return DASHBOARD_FILE.read_text(encoding="utf-8")


def alert_rule_groups() -> list[dict[str, Any]]:
    """The rule groups of ``alert_rules.yaml`` (a fresh copy each call)."""
    from ..yamlio import load_documents

    (document,) = load_documents(_rules_text(), str(ALERT_RULES_FILE))
    groups = document.get("groups") if isinstance(document, dict) else None
    if not isinstance(groups, list) or not groups:
        raise ValueError(f"{ALERT_RULES_FILE}: expected a map with a non-empty list of groups")
    return groups


def metrics_rbac_objects(values: dict[str, Any], labels: dict[str, str]) -> list[dict[str, Any]]:
    """The reader role (unbound), the auth role and its binding to the controller's ServiceAccount."""
    rbac_api = "rbac.authorization.k8s.io/v1"
    return [
        {
            "apiVersion": rbac_api,
            "kind": "ClusterRole",
            "metadata": {"name": METRICS_READER_ROLE, "labels": labels},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
        {
            "apiVersion": rbac_api,
            "kind": "ClusterRole",
            "metadata": {"name": METRICS_AUTH_ROLE, "labels": labels},
            "rules": [
                {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
            ],
        },
        {
            "apiVersion": rbac_api,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{METRICS_AUTH_ROLE}binding", "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": METRICS_AUTH_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": values["serviceAccount"]["name"], "namespace": values["namespace"]["name"]}],
        },
    ]


def _tls_config(secret: str, namespace: str) -> dict[str, Any]:
    """Verify the controller's certificate against the ``ca.crt`` of its own Secret, for the
    Service's DNS name; a self-signed certificate made at start cannot be verified."""
    if not secret:
        return {"insecureSkipVerify": True}
    return {"ca": {"secret": {"name": secret, "key": "ca.crt"}}, "serverName": f"{METRICS_SERVICE}.{namespace}.svc"}


def monitoring_objects(values: dict[str, Any], labels: dict[str, str]) -> list[dict[str, Any]]:
    """The metrics Service, then the ServiceMonitor, the PrometheusRule and the dashboard when their values say so."""
    namespace = values["namespace"]["name"]
    metrics = values["metrics"]
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": METRICS_SERVICE, "namespace": namespace, "labels": {**labels, **SERVICE_LABELS}},
            "spec": {
                "selector": dict(_POD_SELECTOR),
                "ports": [{"name": "https", "port": METRICS_PORT, "protocol": "TCP", "targetPort": "metrics"}],
            },
        }
    ]
    if metrics["serviceMonitor"]["enabled"]:
        objects.append(
            {
                "apiVersion": "monitoring.coreos.com/v1",
                "kind": "ServiceMonitor",
                "metadata": {"name": SERVICE_MONITOR, "namespace": namespace, "labels": {**metrics["serviceMonitor"]["labels"], **labels}},
                "spec": {
                    "endpoints": [
                        {
                            "path": "/metrics",
                            "port": "https",
                            "scheme": "https",
                            "bearerTokenFile": _TOKEN_FILE,
                            "honorLabels": True,
                            "tlsConfig": _tls_config(metrics["certSecret"], namespace),
                        }
                    ],
                    "selector": {"matchLabels": dict(SERVICE_LABELS)},
                },
            }
        )
    if metrics["prometheusRule"]["enabled"]:
        objects.append(
            {
                "apiVersion": "monitoring.coreos.com/v1",
                "kind": "PrometheusRule",
                "metadata": {"name": PROMETHEUS_RULE, "namespace": namespace, "labels": {**metrics["prometheusRule"]["labels"], **labels}},
                "spec": {"groups": alert_rule_groups()},
            }
        )
    if metrics["grafanaDashboard"]["enabled"]:
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": DASHBOARD_CONFIGMAP, "namespace": namespace, "labels": {**labels, **DASHBOARD_LABELS}},
                "data": {DASHBOARD_KEY: dashboard_text()},
            }
        )
    return objects
