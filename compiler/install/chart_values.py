"""The chart's ``values.yaml`` (the install defaults, commented) and ``values.schema.json`` (their rules).

Both come from the values model in :mod:`.values`: the defaults are ``DEFAULT_VALUES`` and the
schema carries the same types, patterns, enums and bounds that ``resolve_values`` checks, so
Helm refuses what ``setup render`` refuses (warnings aside: a schema cannot warn).
"""

from __future__ import annotations

import json
from typing import Any

from ..emit import dump_yaml
from .values import (
    DEFAULT_VALUES,
    DIGEST,
    DNS_LABEL,
    DNS_SUBDOMAIN,
    DURATION,
    FREE_FORM,
    LABEL_KEY,
    LABEL_MAPS,
    LABEL_VALUE,
    LOG_LEVELS,
    MINIMUMS,
    PULL_POLICIES,
    RBAC_SCOPES,
    REPOSITORY,
    TAG,
)

__all__ = ["COMMENTS", "values_schema", "values_yaml"]

#: One comment per key of the values model, written above it in values.yaml and into the schema.
COMMENTS: dict[str, str] = {
    "namespace": "The controller's namespace. Every namespaced object of the install goes here (not into the release namespace).",
    "namespace.name": "Namespace name (a DNS-1123 label).",
    "namespace.create": "Create the Namespace object; set false when it already exists.",
    "serviceAccount": "The controller's ServiceAccount.",
    "serviceAccount.name": "ServiceAccount name; the RBAC bindings name it as their subject.",
    "crds": "The nvcre CustomResourceDefinitions.",
    "crds.install": "Install the CRDs with the chart (they are templates: upgrades update them, uninstall deletes them).",
    "logProfiles": "The built-in LogProfiles that tell the controller how to read workload logs.",
    "logProfiles.install": "Install the built-in LogProfiles.",
    "rbac": "What the controller may do where.",
    "rbac.scope": "cluster: run anywhere (one ClusterRoleBinding); namespaced: only in rbac.runNamespaces.",
    "rbac.runNamespaces": "Under namespaced scope, the namespaces runs may use (one RoleBinding each).",
    "manager": "The controller Deployment.",
    "manager.image": "The controller image.",
    "manager.image.repository": "Image repository.",
    "manager.image.tag": "Image tag, used when no digest is set.",
    "manager.image.digest": "sha256:<64 hex digits>; when set it pins the image and the tag is ignored.",
    "manager.image.pullPolicy": "Always, IfNotPresent or Never.",
    "manager.imagePullSecrets": "Names of Secrets in the controller's namespace to pull the image with.",
    "manager.replicas": "Replicas; more than one needs manager.leaderElection.",
    "manager.leaderElection": "Elect one active replica through a Lease in the controller's namespace.",
    "manager.workers": "Concurrent reconcile workers.",
    "manager.logLevel": "debug, info, warning or error.",
    "manager.namespaceAccessTimeout": "How long a run waits for access to its namespace (a duration such as 10m).",
    "manager.neverSchedulableTimeout": "How long a Job's pods may wait on nodes where no eviction makes room before it fails.",
    "manager.computeDomainTimeout": "How long a Job's ComputeDomain may stay not Ready before the Job fails.",
    "manager.resources": "Container resources (passed through as given).",
    "manager.nodeSelector": "Node selector for the controller pod (passed through as given).",
    "manager.tolerations": "Tolerations for the controller pod (passed through as given).",
    "metrics": "Prometheus: the controller serves /metrics over HTTPS on port 8443 (Service nvcre-metrics-service, port https); "
    "a scraper needs a binding to the ClusterRole nvcre-metrics-reader.",
    "metrics.certSecret": "A Secret in the controller's namespace holding the metrics serving certificate (tls.crt, tls.key, "
    "and ca.crt for the ServiceMonitor to verify it, as cert-manager writes them); empty: a self-signed certificate made at start.",
    "metrics.serviceMonitor": "A ServiceMonitor (monitoring.coreos.com/v1) that scrapes the controller with its own ServiceAccount token.",
    "metrics.serviceMonitor.enabled": "Install the ServiceMonitor; set false on clusters without the Prometheus Operator CRDs.",
    "metrics.serviceMonitor.labels": "Extra labels on the ServiceMonitor, for a Prometheus that selects monitors by label "
    "(kube-prometheus-stack: release: <its release name>).",
    "metrics.prometheusRule": "The alert rules nvcre ships, as a PrometheusRule (monitoring.coreos.com/v1).",
    "metrics.prometheusRule.enabled": "Install the PrometheusRule; set false on clusters without the Prometheus Operator CRDs.",
    "metrics.prometheusRule.labels": "Extra labels on the PrometheusRule, for a Prometheus that selects rules by label.",
    "metrics.grafanaDashboard": 'The burn-in Grafana dashboard, as a ConfigMap labelled grafana_dashboard: "1" for Grafana\'s dashboard sidecar.',
    "metrics.grafanaDashboard.enabled": "Install the dashboard ConfigMap (a plain ConfigMap: no CRDs needed).",
}

#: Patterns and enums by values path (the same ones ``resolve_values`` applies).
_STRING_RULES: dict[str, dict[str, Any]] = {
    "namespace.name": {"pattern": DNS_LABEL},
    "serviceAccount.name": {"pattern": DNS_SUBDOMAIN},
    "rbac.scope": {"enum": list(RBAC_SCOPES)},
    "manager.image.repository": {"pattern": REPOSITORY},
    "manager.image.digest": {"anyOf": [{"const": ""}, {"pattern": DIGEST}]},
    "manager.image.pullPolicy": {"enum": list(PULL_POLICIES)},
    "manager.logLevel": {"enum": list(LOG_LEVELS)},
    "manager.namespaceAccessTimeout": {"pattern": DURATION},
    "manager.neverSchedulableTimeout": {"pattern": DURATION},
    "manager.computeDomainTimeout": {"pattern": DURATION},
    "metrics.certSecret": {"anyOf": [{"const": ""}, {"pattern": DNS_SUBDOMAIN}]},
}
_ITEM_RULES: dict[str, dict[str, Any]] = {
    "rbac.runNamespaces": {"type": "string", "pattern": DNS_LABEL},
    "manager.imagePullSecrets": {"type": "string", "pattern": DNS_SUBDOMAIN},
}
_UNIQUE_ITEMS = {"rbac.runNamespaces"}
#: Rules that tie two values together.
_CROSS_RULES: dict[str, dict[str, Any]] = {
    "manager.image": {
        "if": {"properties": {"digest": {"const": ""}}},
        "then": {"properties": {"tag": {"pattern": TAG}}},
    },
    "manager": {
        "if": {"properties": {"replicas": {"minimum": 2}}, "required": ["replicas"]},
        "then": {"properties": {"leaderElection": {"const": True}}},
    },
}


def _schema(node: Any, path: tuple[str, ...]) -> dict[str, Any]:
    where = ".".join(path)
    out: dict[str, Any] = {}
    if where in COMMENTS:
        out["description"] = COMMENTS[where]
    if path in FREE_FORM:
        out["type"] = "object" if isinstance(node, dict) else "array"
        if path in LABEL_MAPS:
            out["propertyNames"] = {"pattern": LABEL_KEY}
            out["additionalProperties"] = {"type": "string", "pattern": LABEL_VALUE}
    elif isinstance(node, dict):
        out.update(
            {
                "type": "object",
                "additionalProperties": False,
                "required": sorted(node),
                "properties": {key: _schema(value, (*path, key)) for key, value in node.items()},
            }
        )
        out.update(_CROSS_RULES.get(where, {}))
    elif isinstance(node, bool):
        out["type"] = "boolean"
    elif isinstance(node, int):
        out["type"] = "integer"
        if path[-1] in MINIMUMS:
            out["minimum"] = MINIMUMS[path[-1]]
    elif isinstance(node, str):
        out["type"] = "string"
        out.update(_STRING_RULES.get(where, {}))
    elif isinstance(node, list):
        out["type"] = "array"
        out["items"] = _ITEM_RULES.get(where, {})
        if where in _UNIQUE_ITEMS:
            out["uniqueItems"] = True
    return out


def values_schema() -> str:
    """values.schema.json: the values model as a JSON Schema (draft 7), every key required."""
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "nvcre chart values", **_schema(DEFAULT_VALUES, ())}
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _lines(node: dict[str, Any], path: tuple[str, ...], indent: str) -> list[str]:
    lines: list[str] = []
    for key, value in node.items():
        where = (*path, key)
        if len(path) == 0 and lines:
            lines.append("")
        comment = COMMENTS.get(".".join(where))
        if comment:
            lines.append(f"{indent}# {comment}")
        if isinstance(value, dict) and value and where not in FREE_FORM:
            lines.append(f"{indent}{dump_yaml({key: {}}).split(':', 1)[0]}:")
            lines.extend(_lines(value, where, indent + "  "))
        else:
            lines.extend(indent + line for line in dump_yaml({key: value}).splitlines())
    return lines


def values_yaml() -> str:
    """values.yaml: ``DEFAULT_VALUES`` with a comment above every key."""
    header = [
        "# Default values of the nvcre chart: the same defaults as `nvcrectl setup render`.",
        "# This file is generated by `nvcrectl setup chart`; values.schema.json checks every value.",
        "",
    ]
    return "\n".join([*header, *_lines(DEFAULT_VALUES, (), "")]) + "\n"
