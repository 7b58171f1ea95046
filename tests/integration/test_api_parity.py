"""Offline validation and the API server agree.

Every case of the parity table in ``data/parity/`` (and every example in ``examples/``) is
created on the server with ``dryRun=All`` and strict field validation, and checked with
``validate()``. Both must give the same verdict and, for a rejection, report errors at the
same set of field paths (and with the same reasons), which must also be the paths the table
expects. Where the server stops early, the table names the paths only ``validate()`` reports
(``offlineOnly``) and the test checks that the server really did stop early.

Then the update rules: the spec of a stored Certification and WorkloadRun cannot change
(the server and ``validate(new, old=old)`` reject it at the same path), a label can.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.api import GROUP, VERSION, kind_class, validate
from tests.integration.integration_helpers import unique

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TABLE = Path(__file__).resolve().parent / "data" / "parity"

#: The cause the server adds when a blocking schema error made it skip every CEL rule.
RULES_SKIPPED = "some validation rules were not checked because the object was invalid"
#: How strict field validation names an unknown field in the 400 message.
UNKNOWN_FIELD = re.compile(r'unknown field "([^"]+)"')
#: Causes without a field that name it in the message instead: the anyOf of an int-or-string
#: and integer formats (``Checked value must be of type integer with format int32 in spec.x``).
PATH_IN_MESSAGE = (
    re.compile(r'"([^"\s]+)" must validate at least one schema'),
    re.compile(r"Checked value must be of type \w+ .* in ([^\s]+)$"),
)


def _load_table() -> list[dict[str, Any]]:
    cases = []
    for path in sorted(TABLE.glob("*.yaml")):
        for case in yaml.safe_load_all(path.read_text()):
            case["file"] = path.name
            cases.append(case)
    for path in sorted((REPO / "examples").glob("*.yaml")):
        for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith(f"{GROUP}/"):
                name = f"example-{path.stem}-{index}"
                cases.append({"name": name, "about": "a shipped example", "document": doc, "file": path.name})
    return cases


CASES = _load_table()


def _document(case: dict[str, Any]) -> dict[str, Any]:
    if "source" in case:
        return yaml.safe_load((REPO / case["source"]).read_text())
    return copy.deepcopy(case["document"])


@dataclass
class ServerVerdict:
    """What the API server said about one request."""

    status: int
    #: Every field path the server names (in a cause's field or, failing that, its message).
    paths: set[str] = field(default_factory=set)
    #: (path, reason) of the causes that carry a field.
    reasons: set[tuple[str, str]] = field(default_factory=set)
    rules_skipped: bool = False
    stopped_at_decoding: bool = False
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.status < 400


def server_verdict(exc_or_none) -> ServerVerdict:
    """Read the paths out of a failed request's Status (or an empty verdict on success)."""
    if exc_or_none is None:
        return ServerVerdict(status=201)
    body = json.loads(exc_or_none.body)
    verdict = ServerVerdict(status=exc_or_none.status, body=body)
    message = body.get("message", "")
    if body.get("reason") == "BadRequest" and "strict decoding error" in message:
        verdict.stopped_at_decoding = True
        for path in UNKNOWN_FIELD.findall(message):
            verdict.paths.add(path)
            verdict.reasons.add((path, "FieldValueUnknown"))
        return verdict
    for cause in (body.get("details") or {}).get("causes") or []:
        where, text = cause.get("field", ""), cause.get("message", "")
        if where in ("", "<nil>"):
            if RULES_SKIPPED in text:
                verdict.rules_skipped = True
                continue
            named = [m.group(1) for pattern in PATH_IN_MESSAGE if (m := pattern.search(text))]
            assert named, f"a cause without a field, and no path in its message: {cause}"
            verdict.paths.update(named)
            continue
        verdict.paths.add(where)
        verdict.reasons.add((where, cause.get("reason", "")))
    return verdict


def our_reasons(diagnostics) -> set[tuple[str, str]]:
    """Our codes in the server's spelling: FieldTooMany -> FieldValueTooMany."""
    out = set()
    for d in diagnostics:
        if d.is_error:
            reason = "FieldValue" + d.code.removeprefix("Field") if d.code.startswith("Field") else d.code
            out.add((d.path, reason))
    return out


@pytest.fixture(scope="module")
def api(controlplane):
    with controlplane.api_client() as api_client:
        yield api_client


@pytest.fixture(scope="module")
def parity_namespace(api):
    from kubernetes import client

    name = unique("parity")
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def _create(api, namespace: str, doc: dict[str, Any], *, dry_run: bool):
    from kubernetes import client

    plural = kind_class(doc["kind"]).plural
    return client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, plural, doc, dry_run="All" if dry_run else None, field_validation="Strict"
    )


def test_the_table_is_large_enough():
    kinds = {_document(c)["kind"] for c in CASES}
    rejected = [c for c in CASES if c.get("rejectedAt")]
    assert len(CASES) >= 30, len(CASES)
    assert {"Certification", "WorkloadRun"} <= kinds
    assert 10 <= len(rejected) < len(CASES), "the table needs both accepted and rejected documents"
    assert len({c["name"] for c in CASES}) == len(CASES), "case names must be unique"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_server_and_validate_agree(api, parity_namespace, case):
    from kubernetes import client

    doc = _document(case)
    ours = [d for d in validate(doc) if d.is_error]
    stored = None
    try:
        stored = _create(api, parity_namespace, doc, dry_run=True)
        server = server_verdict(None)
    except client.ApiException as exc:
        server = server_verdict(exc)

    expected = set(case.get("rejectedAt") or ())
    offline_only = set(case.get("offlineOnly") or ())
    offline_only_reasons = {tuple(item.split(" ", 1)) for item in case.get("offlineOnlyReasons") or ()}
    our_paths = {d.path for d in ours}
    report = (
        f"{case['file']}: {case['name']} ({case['about']})\n"
        f"server {server.status}: {json.dumps(server.body)[:1500]}\nours: {[d.render() for d in ours]}"
    )

    # The verdicts agree, and they are the verdict the table expects.
    assert server.accepted == (not ours), f"the verdicts differ\n{report}"
    assert server.accepted == (not expected), f"not the verdict the table expects\n{report}"
    if server.accepted:
        # What the server would store (defaults applied, server-set metadata) is valid too.
        assert stored["metadata"]["name"] == doc["metadata"]["name"]
        assert [d.render() for d in validate(stored) if d.is_error] == [], report
        return
    assert server.status in (400, 422), report
    # validate() reports what the table expects, at exactly these paths.
    assert our_paths == expected, f"validate() paths differ from the table\n{report}"
    # The server reports the same paths, minus the ones the table says it cannot reach.
    assert offline_only <= our_paths, "offlineOnly must name paths validate() reports"
    assert offline_only_reasons <= our_reasons(ours), "offlineOnlyReasons must name what validate() reports"
    assert server.paths == our_paths - offline_only, f"the field paths differ\n{report}"
    # Same reasons at the paths the server gives a cause of their own, except the results
    # the server never computed.
    unreached = offline_only_reasons | {r for r in our_reasons(ours) if r[0] in offline_only}
    with_cause = {path for path, _ in server.reasons}
    comparable = {r for r in our_reasons(ours) if r[0] in with_cause} - unreached
    assert server.reasons == comparable, f"same paths, different reasons\n{report}"
    if offline_only or offline_only_reasons:
        # A documented difference: the server stopped early, and says so.
        assert server.rules_skipped or server.stopped_at_decoding, report


#: Per kind: the table case to store, and a spec change to attempt on it.
IMMUTABLE = {
    "Certification": (
        "cert-minimal",
        lambda spec: spec["categories"].append({"domain": "diagnostics", "variant": "dcgm-level4"}),
    ),
    "WorkloadRun": ("wr-torch-script", lambda spec: spec.update(numNodes=spec["numNodes"] + 1)),
}


@pytest.mark.parametrize("kind", sorted(IMMUTABLE))
def test_spec_is_immutable_and_labels_are_not(api, parity_namespace, kind):
    from kubernetes import client

    case_name, change = IMMUTABLE[kind]
    doc = _document(next(c for c in CASES if c["name"] == case_name))
    assert doc["kind"] == kind
    doc["metadata"]["name"] = unique(kind.lower())
    plural = kind_class(kind).plural
    objects = client.CustomObjectsApi(api)
    old = _create(api, parity_namespace, doc, dry_run=False)
    name = old["metadata"]["name"]

    changed = copy.deepcopy(old)
    change(changed["spec"])
    assert changed["spec"] != old["spec"]
    with pytest.raises(client.ApiException) as caught:
        objects.replace_namespaced_custom_object(GROUP, VERSION, parity_namespace, plural, name, changed)
    server = server_verdict(caught.value)
    ours = [d for d in validate(changed, old=old) if d.is_error]
    assert server.status == 422, server.body
    assert server.paths == {d.path for d in ours} == {"spec"}, (server.body, ours)
    assert "spec is immutable after creation" in server.body["message"]
    assert [d.message for d in ours] == ["spec is immutable after creation"]

    labelled = copy.deepcopy(old)
    labelled["metadata"].setdefault("labels", {})["nvcre-parity/checked"] = "yes"
    assert [d.render() for d in validate(labelled, old=old) if d.is_error] == []
    stored = objects.replace_namespaced_custom_object(GROUP, VERSION, parity_namespace, plural, name, labelled)
    assert stored["metadata"]["labels"]["nvcre-parity/checked"] == "yes"
    assert stored["spec"] == old["spec"]
    assert stored["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]
    assert stored["metadata"]["generation"] == old["metadata"]["generation"], "a label is not a spec change"
