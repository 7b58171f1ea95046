"""The admission policy that keeps the controller from lending its rights: authors need their own.

The controller turns Workflows, nvcre Jobs and WorkloadRuns into pods, with rights their authors
may not have. ``nvcre-author-rights`` (a ValidatingAdmissionPolicy and its binding, Deny) runs
when anyone other than the controller's own ServiceAccount creates one of those objects, or
changes its ``spec``, and asks the API server's authorizer whether *the requesting user* may:

* for a Workflow or an nvcre Job: ``create pods`` and ``create trainjobs.trainer.kubeflow.org`` in
  the namespace (its commands run in pods of the author's choosing);
* for each Workflow dependency: ``create`` its kind there (TrainingRuntime, ConfigMap,
  PersistentVolumeClaim, ResourceClaimTemplate, ComputeDomain);
* for each ServiceAccount a pod template names (other than ``default``): ``create`` on its
  ``serviceaccounts/token`` subresource, the right to act as it;
* for each Secret, ConfigMap and PersistentVolumeClaim a pod template mounts or reads (volumes,
  projected sources, ``env[].valueFrom``, ``envFrom``) and that is not one of the Workflow's own
  dependencies: ``get`` on it by name.

The pod templates read are those of the Workflow's TrainingRuntime dependencies, of the runtime
patches (``workload.trainJob.runtimePatches[].trainingRuntimeSpec.template``) of a Workflow's Job
template or of a Job, and a WorkloadRun's own ``volumes`` and ``initContainers`` (a WorkloadRun
needs no pod rights: its pods run the catalog's frameworks as the namespace's ``default``
ServiceAccount). Anything a reference could hide behind elsewhere, the controller refuses itself
(``runtime/reconcile/pod_references.py``).

The expressions use the ``flatten()`` list function, so the API server must be Kubernetes 1.34
or newer (ValidatingAdmissionPolicy is GA since 1.30).
"""

from __future__ import annotations

from typing import Any

__all__ = ["POLICY_NAME", "admission_objects", "controller_username"]

POLICY_NAME = "nvcre-author-rights"
GROUP = "nvcre.nvidia.com"
_API = "admissionregistration.k8s.io/v1"

#: A dependency kind -> [API group, resource] whose ``create`` the author needs.
_DEPENDENCY_RESOURCES = (
    "{'TrainingRuntime': ['trainer.kubeflow.org', 'trainingruntimes'], 'ConfigMap': ['', 'configmaps'], "
    "'PersistentVolumeClaim': ['', 'persistentvolumeclaims'], 'ResourceClaimTemplate': ['resource.k8s.io', 'resourceclaimtemplates'], "
    "'ComputeDomain': ['resource.nvidia.com', 'computedomains']}"
)

_VARIABLES: list[tuple[str, str]] = [
    ("isWorkloadRun", "request.resource.resource == 'workloadruns'"),
    (
        "deps",
        "request.resource.resource == 'workflows' && has(object.spec.dependencies) ? object.spec.dependencies : []",
    ),
    (
        "jobSpec",
        "request.resource.resource == 'workflows' ? "
        "(has(object.spec.jobTemplate) && has(object.spec.jobTemplate.spec) ? object.spec.jobTemplate.spec : {}) : object.spec",
    ),
    (
        "patches",
        "!variables.isWorkloadRun && has(variables.jobSpec.workload) && has(variables.jobSpec.workload.trainJob) "
        "&& has(variables.jobSpec.workload.trainJob.runtimePatches) ? variables.jobSpec.workload.trainJob.runtimePatches : []",
    ),
    (
        "templates",
        "variables.deps.filter(d, has(d.kind) && d.kind == 'TrainingRuntime' && has(d.spec) && has(d.spec.template))"
        ".map(d, d.spec.template) + variables.patches.filter(p, has(p.trainingRuntimeSpec) && has(p.trainingRuntimeSpec.template))"
        ".map(p, p.trainingRuntimeSpec.template)",
    ),
    (
        "pods",
        "variables.isWorkloadRun ? [object.spec] : variables.templates.filter(t, has(t.spec) && has(t.spec.replicatedJobs))"
        ".map(t, t.spec.replicatedJobs.filter(j, has(j.template) && has(j.template.spec) && has(j.template.spec.template) "
        "&& has(j.template.spec.template.spec)).map(j, j.template.spec.template.spec)).flatten()",
    ),
    (
        "containers",
        "variables.pods.map(p, (has(p.containers) ? p.containers : []) + (has(p.initContainers) ? p.initContainers : [])).flatten()",
    ),
    ("volumes", "variables.pods.map(p, has(p.volumes) ? p.volumes : []).flatten()"),
    (
        "sources",
        "variables.volumes.filter(v, has(v.projected) && has(v.projected.sources)).map(v, v.projected.sources).flatten()",
    ),
    (
        "envRefs",
        "variables.containers.map(c, has(c.env) ? c.env.filter(e, has(e.valueFrom)).map(e, e.valueFrom) : []).flatten()",
    ),
    ("envFrom", "variables.containers.map(c, has(c.envFrom) ? c.envFrom : []).flatten()"),
    (
        "own",
        "variables.deps.filter(d, has(d.kind) && has(d.metadata) && has(d.metadata.name)).map(d, d.kind + '/' + d.metadata.name)",
    ),
    (
        "accounts",
        "variables.pods.filter(p, has(p.serviceAccountName) && p.serviceAccountName != 'default').map(p, p.serviceAccountName) "
        "+ variables.pods.filter(p, has(p.serviceAccount) && p.serviceAccount != 'default').map(p, p.serviceAccount)",
    ),
    (
        "secrets",
        "variables.volumes.filter(v, has(v.secret) && has(v.secret.secretName)).map(v, v.secret.secretName) "
        "+ variables.sources.filter(s, has(s.secret) && has(s.secret.name)).map(s, s.secret.name) "
        "+ variables.envRefs.filter(r, has(r.secretKeyRef) && has(r.secretKeyRef.name)).map(r, r.secretKeyRef.name) "
        "+ variables.envFrom.filter(r, has(r.secretRef) && has(r.secretRef.name)).map(r, r.secretRef.name)",
    ),
    (
        "configMaps",
        "(variables.volumes.filter(v, has(v.configMap) && has(v.configMap.name)).map(v, v.configMap.name) "
        "+ variables.sources.filter(s, has(s.configMap) && has(s.configMap.name)).map(s, s.configMap.name) "
        "+ variables.envRefs.filter(r, has(r.configMapKeyRef) && has(r.configMapKeyRef.name)).map(r, r.configMapKeyRef.name) "
        "+ variables.envFrom.filter(r, has(r.configMapRef) && has(r.configMapRef.name)).map(r, r.configMapRef.name))"
        ".filter(n, !(('ConfigMap/' + n) in variables.own))",
    ),
    (
        "claims",
        "variables.volumes.filter(v, has(v.persistentVolumeClaim) && has(v.persistentVolumeClaim.claimName))"
        ".map(v, v.persistentVolumeClaim.claimName).filter(n, !(('PersistentVolumeClaim/' + n) in variables.own))",
    ),
    ("dependencyResources", _DEPENDENCY_RESOURCES),
    (
        "dependencyNames",
        "variables.deps.filter(d, has(d.kind) && d.kind in variables.dependencyResources)"
        ".map(d, d.kind + ' ' + (has(d.metadata) && has(d.metadata.name) ? string(d.metadata.name) : '(unnamed)'))",
    ),
]


def _every(listed: str, check: str, what: str) -> dict[str, Any]:
    """A validation that the user passes ``check`` (a CEL check on ``n``) for every ``n`` of
    ``variables.<listed>``. The message names them all: a message expression cannot ask the
    authorizer, so it cannot single out the refused ones."""
    return {
        "expression": f"variables.{listed}.all(n, {check})",
        "messageExpression": f"request.userInfo.username + ' {what} in namespace ' + request.namespace + ' (one or more of: ' "
        f"+ variables.{listed}.map(n, string(n)).join(', ') + ')'",
        "reason": "Forbidden",
    }


def _get(resource: str) -> str:
    return f"authorizer.group('').resource('{resource}').namespace(request.namespace).name(n).check('get').allowed()"


def _validations() -> list[dict[str, Any]]:
    def may_create(group: str, resource: str, why: str) -> dict[str, Any]:
        return {
            "expression": f"variables.isWorkloadRun || authorizer.group('{group}').resource('{resource}')"
            ".namespace(request.namespace).check('create').allowed()",
            "messageExpression": f"request.userInfo.username + ' may not create {resource} in namespace ' + request.namespace "
            f"+ ', and {why}'",
            "reason": "Forbidden",
        }

    return [
        may_create("", "pods", "the controller would run the commands of this object in pods for them"),
        may_create("trainer.kubeflow.org", "trainjobs", "the controller would create TrainJobs for them"),
        {
            "expression": "variables.deps.filter(d, has(d.kind) && d.kind in variables.dependencyResources).all(d, "
            "authorizer.group(variables.dependencyResources[d.kind][0]).resource(variables.dependencyResources[d.kind][1])"
            ".namespace(request.namespace).check('create').allowed())",
            "messageExpression": "request.userInfo.username + ' may not create every dependency of this Workflow in namespace ' "
            "+ request.namespace + ' (' + variables.dependencyNames.join(', ') + ')'",
            "reason": "Forbidden",
        },
        _every(
            "accounts",
            "authorizer.group('').resource('serviceaccounts').subresource('token').namespace(request.namespace).name(n)"
            ".check('create').allowed()",
            "may not act as (create serviceaccounts/token for) every ServiceAccount the pods would run as",
        ),
        _every("secrets", _get("secrets"), "may not get every Secret the pods would mount or read"),
        _every("configMaps", _get("configmaps"), "may not get every ConfigMap the pods would mount or read"),
        _every("claims", _get("persistentvolumeclaims"), "may not get every PersistentVolumeClaim the pods would mount"),
    ]


def controller_username(values: dict[str, Any]) -> str:
    """The user name the controller's ServiceAccount authenticates as."""
    return f"system:serviceaccount:{values['namespace']['name']}:{values['serviceAccount']['name']}"


def admission_objects(values: dict[str, Any], labels: dict[str, str]) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy and its Deny binding."""
    policy = {
        "apiVersion": _API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY_NAME, "labels": dict(labels)},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [GROUP],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["workflows", "jobs", "workloadruns"],
                    }
                ]
            },
            "matchConditions": [
                {"name": "not-the-controller", "expression": f"request.userInfo.username != '{controller_username(values)}'"},
                {"name": "spec-written", "expression": "request.operation == 'CREATE' || oldObject.spec != object.spec"},
            ],
            "variables": [{"name": name, "expression": expression} for name, expression in _VARIABLES],
            "validations": _validations(),
        },
    }
    binding = {
        "apiVersion": _API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY_NAME, "labels": dict(labels)},
        "spec": {"policyName": POLICY_NAME, "validationActions": ["Deny"]},
    }
    return [policy, binding]
