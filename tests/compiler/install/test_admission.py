"""The admission policy in the install: rendered by ``setup render`` for the values, with its binding.

Its expressions are checked by a real API server in tests/integration/test_admission_policy.py;
here, what the install renders: the exemption follows ``namespace.name`` and
``serviceAccount.name``, the policy denies, and every check carries a message that names the
user and the namespace.
"""

from __future__ import annotations

from nvcre.compiler.install import render_install
from nvcre.compiler.install.admission import POLICY_NAME


def _policy_and_binding(*layers: dict) -> tuple[dict, dict]:
    objects = render_install(list(layers)).objects
    (policy,) = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"]
    (binding,) = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"]
    kinds = [o["kind"] for o in objects]
    assert kinds.index("ValidatingAdmissionPolicy") < kinds.index("ValidatingAdmissionPolicyBinding") < kinds.index("Deployment")
    return policy, binding


def test_the_policy_exempts_only_the_controllers_own_service_account() -> None:
    policy, binding = _policy_and_binding({"namespace": {"name": "tools"}, "serviceAccount": {"name": "runner"}})
    (exempt,) = [c for c in policy["spec"]["matchConditions"] if c["name"] == "not-the-controller"]
    assert exempt["expression"] == "request.userInfo.username != 'system:serviceaccount:tools:runner'"
    assert policy["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "nvcrectl"
    assert binding["spec"] == {"policyName": POLICY_NAME, "validationActions": ["Deny"]}
    assert policy["spec"]["failurePolicy"] == "Fail"


def test_the_policy_covers_the_kinds_that_become_pods() -> None:
    policy, _ = _policy_and_binding()
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert rule["apiGroups"] == ["nvcre.nvidia.com"] and rule["operations"] == ["CREATE", "UPDATE"]
    assert rule["resources"] == ["workflows", "jobs", "workloadruns"]


def test_every_check_names_the_user_the_namespace_and_what_is_missing() -> None:
    policy, _ = _policy_and_binding()
    validations = policy["spec"]["validations"]
    for check in validations:
        assert "authorizer" in check["expression"] or "variables." in check["expression"]
        assert check["messageExpression"].startswith("request.userInfo.username + ' may not ")
        assert "request.namespace" in check["messageExpression"] and check["reason"] == "Forbidden"
    checked = " ".join(v["expression"] for v in validations) + " ".join(v["expression"] for v in policy["spec"]["variables"])
    for needed in ("'pods'", "'trainjobs'", "subresource('token')", "'secrets'", "'configmaps'", "'persistentvolumeclaims'"):
        assert needed in checked


def test_no_expression_can_exceed_the_api_servers_cel_cost_limits() -> None:
    """An authorizer check costs 350,000: at most two per expression (limit 1,000,000), at most 28
    in the whole policy (budget 10,000,000), however many dependencies or names an object holds.
    Each check sits outside any comprehension, so its count in the text is its worst-case count."""
    policy, _ = _policy_and_binding()
    expressions = [v["expression"] for v in policy["spec"]["validations"]] + [v["expression"] for v in policy["spec"]["variables"]]
    for expression in expressions:
        assert expression.count(".check(") <= 2, expression
        if ".check(" in expression:
            assert ".all(" not in expression and ".exists(" not in expression and ".map(" not in expression, expression
    assert sum(e.count(".check(") for e in expressions) <= 28


def test_each_named_slot_names_the_object_it_refuses() -> None:
    policy, _ = _policy_and_binding()
    messages = [v["messageExpression"] for v in policy["spec"]["validations"]]
    assert any("' may not get Secret ' + variables.secrets[0]" in m for m in messages)
    assert any("act as (create serviceaccounts/token for) ServiceAccount ' + variables.accounts[3]" in m for m in messages)
