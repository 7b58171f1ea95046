"""Install objects for the controller, from chart-style values: the pure core of ``nvcrectl setup render``.

``render_install(values)`` merges the values over the defaults, checks them (every problem a
diagnostic with its field path), and returns the objects to apply, in apply order: the CRDs,
the built-in LogProfiles, the namespace, the ServiceAccount, RBAC (the manager's cluster role,
the per-namespace run role and its bindings for ``rbac.scope``, the metrics roles), the
admission policy that checks a Workflow author's own rights (:mod:`.admission`), the
controller Deployment, and what Prometheus and Grafana need (the metrics Service, a
ServiceMonitor, the shipped alert rules as a PrometheusRule and the burn-in dashboard in a
ConfigMap for Grafana's sidecar; see :mod:`.monitoring`).
Same values, same objects: nothing here reads a cluster, a clock or the environment.
"""

from __future__ import annotations

from .render import Installed, render_install
from .values import DEFAULT_VALUES, merge_values, parse_set, resolve_values

__all__ = ["DEFAULT_VALUES", "Installed", "merge_values", "parse_set", "render_install", "resolve_values"]
