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
(``runtime/judge/pod_references.py``).

Every authorizer check costs 350,000 of the API server's CEL budget (1,000,000 per expression,
10,000,000 per policy), so no expression makes more than two: a dependency kind is checked once
however many dependencies share it, and names are checked one per validation, up to
``NAMED_CHECKS`` of a kind, after one namespace-wide check that admits any number. An author who
holds a right by name only may use up to ``NAMED_CHECKS`` names of that kind.

The expressions use the ``flatten()`` and ``distinct()`` list functions, so the API server must be
Kubernetes 1.34 or newer (ValidatingAdmissionPolicy is GA since 1.30).
"""

from __future__ import annotations

from typing import Any

from ..vocabulary import GROUP

__all__ = ["POLICY_NAME", "admission_objects", "controller_username"]

POLICY_NAME = "nvcre-author-rights"
_API = "admissionregistration.k8s.io/v1"

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
        "(variables.pods.filter(p, has(p.serviceAccountName) && p.serviceAccountName != 'default').map(p, p.serviceAccountName) "
        "+ variables.pods.filter(p, has(p.serviceAccount) && p.serviceAccount != 'default').map(p, p.serviceAccount)).distinct()",
    ),
    (
        "secrets",
        "(variables.volumes.filter(v, has(v.secret) && has(v.secret.secretName)).map(v, v.secret.secretName) "
        "+ variables.sources.filter(s, has(s.secret) && has(s.secret.name)).map(s, s.secret.name) "
        "+ variables.envRefs.filter(r, has(r.secretKeyRef) && has(r.secretKeyRef.name)).map(r, r.secretKeyRef.name) "
        "+ variables.envFrom.filter(r, has(r.secretRef) && has(r.secretRef.name)).map(r, r.secretRef.name)).distinct()",
    ),
    (
        "configMaps",
        "(variables.volumes.filter(v, has(v.configMap) && has(v.configMap.name)).map(v, v.configMap.name) "
        "+ variables.sources.filter(s, has(s.configMap) && has(s.configMap.name)).map(s, s.configMap.name) "
        "+ variables.envRefs.filter(r, has(r.configMapKeyRef) && has(r.configMapKeyRef.name)).map(r, r.configMapKeyRef.name) "
        "+ variables.envFrom.filter(r, has(r.configMapRef) && has(r.configMapRef.name)).map(r, r.configMapRef.name))"
        ".filter(n, !(('ConfigMap/' + n) in variables.own)).distinct()",
    ),
    (
        "claims",
        "variables.volumes.filter(v, has(v.persistentVolumeClaim) && has(v.persistentVolumeClaim.claimName))"
        ".map(v, v.persistentVolumeClaim.claimName).filter(n, !(('PersistentVolumeClaim/' + n) in variables.own)).distinct()",
    ),
    ("dependencyKinds", "variables.deps.filter(d, has(d.kind)).map(d, d.kind).distinct()"),
]


#: A dependency kind -> (API group, resource) whose ``create`` the author needs.
_DEPENDENCY_KINDS: tuple[tuple[str, str, str], ...] = (
    ("TrainingRuntime", "trainer.kubeflow.org", "trainingruntimes"),
    ("ConfigMap", "", "configmaps"),
    ("PersistentVolumeClaim", "", "persistentvolumeclaims"),
    ("ResourceClaimTemplate", "resource.k8s.io", "resourceclaimtemplates"),
    ("ComputeDomain", "resource.nvidia.com", "computedomains"),
)

#: How many names of one kind (Secrets, say) are checked one by one; past it the author needs the
#: right on every object of that kind in the namespace. An authorizer check costs 350,000 of the
#: API server's CEL budget (10,000,000 per policy, 1,000,000 per expression), so the policy's worst
#: case, 2 + 5 + 4 x (1 + NAMED_CHECKS) checks, must stay at or under 28.
NAMED_CHECKS = 4

#: (variable, what it is called in messages, subresource or '', verb) for the names a pod template
#: references.
_NAMED: tuple[tuple[str, str, str, str, str], ...] = (
    ("accounts", "ServiceAccount", "serviceaccounts", "token", "create"),
    ("secrets", "Secret", "secrets", "", "get"),
    ("configMaps", "ConfigMap", "configmaps", "", "get"),
    ("claims", "PersistentVolumeClaim", "persistentvolumeclaims", "", "get"),
)


def _authorize(group: str, resource: str, subresource: str, verb: str, name: str = "") -> str:
    """A CEL call asking the authorizer about the requesting user, in the request's namespace."""
    call = f"authorizer.group('{group}').resource('{resource}')"
    if subresource:
        call += f".subresource('{subresource}')"
    call += ".namespace(request.namespace)"
    if name:
        call += f".name({name})"
    return call + f".check('{verb}').allowed()"


def _right(resource: str, subresource: str, verb: str) -> str:
    if subresource == "token":
        return f"act as (create {resource}/token for)"
    return f"{verb}"


def _named_variables() -> list[tuple[str, str]]:
    """For each named kind, ``<kind>AnyName``: true when nothing is named or the author holds the
    right on every object of the kind in the namespace (one check, cached as a variable)."""
    return [
        (f"{variable}AnyName", f"size(variables.{variable}) == 0 || {_authorize('', resource, sub, verb)}")
        for variable, _, resource, sub, verb in _NAMED
    ]


def _named_validations() -> list[dict[str, Any]]:
    """One validation per named slot, so each costs at most two checks and names the refused object,
    and one refusing more names than that unless the author holds the kind namespace-wide."""
    validations: list[dict[str, Any]] = []
    for variable, kind, resource, sub, verb in _NAMED:
        right = _right(resource, sub, verb)
        for slot in range(NAMED_CHECKS):
            validations.append(
                {
                    "expression": f"variables.{variable}AnyName || size(variables.{variable}) <= {slot} || "
                    + _authorize("", resource, sub, verb, f"variables.{variable}[{slot}]"),
                    "messageExpression": f"request.userInfo.username + ' may not {right} {kind} ' + variables.{variable}[{slot}] "
                    f"+ ' in namespace ' + request.namespace + ', which the pods would use'",
                    "reason": "Forbidden",
                }
            )
        validations.append(
            {
                "expression": f"variables.{variable}AnyName || size(variables.{variable}) <= {NAMED_CHECKS}",
                "messageExpression": f"request.userInfo.username + ' may not {right} every {kind} in namespace ' + request.namespace "
                f"+ ', and the pods would use more than {NAMED_CHECKS} by name (' + variables.{variable}.join(', ') "
                f"+ '); past {NAMED_CHECKS} names the right must cover the namespace'",
                "reason": "Forbidden",
            }
        )
    return validations


def _dependency_validations() -> list[dict[str, Any]]:
    """One validation per dependency kind the Workflow holds: one check each, whatever their number."""
    validations: list[dict[str, Any]] = []
    for kind, group, resource in _DEPENDENCY_KINDS:
        validations.append(
            {
                "expression": f"!('{kind}' in variables.dependencyKinds) || {_authorize(group, resource, '', 'create')}",
                "messageExpression": f"request.userInfo.username + ' may not create {resource} in namespace ' + request.namespace "
                f"+ ', and this Workflow depends on ' + variables.deps.filter(d, has(d.kind) && d.kind == '{kind}')"
                f".map(d, '{kind} ' + (has(d.metadata) && has(d.metadata.name) ? string(d.metadata.name) : '(unnamed)'))"
                ".join(', ')",
                "reason": "Forbidden",
            }
        )
    return validations


def _validations() -> list[dict[str, Any]]:
    def may_create(group: str, resource: str, why: str) -> dict[str, Any]:
        return {
            "expression": f"variables.isWorkloadRun || {_authorize(group, resource, '', 'create')}",
            "messageExpression": f"request.userInfo.username + ' may not create {resource} in namespace ' + request.namespace "
            f"+ ', and {why}'",
            "reason": "Forbidden",
        }

    return [
        may_create("", "pods", "the controller would run the commands of this object in pods for them"),
        may_create("trainer.kubeflow.org", "trainjobs", "the controller would create TrainJobs for them"),
        *_dependency_validations(),
        *_named_validations(),
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
            "variables": [{"name": name, "expression": expression} for name, expression in [*_VARIABLES, *_named_variables()]],
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
