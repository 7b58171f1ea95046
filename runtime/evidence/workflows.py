"""The rendered Workflows a run was made of, byte for byte as ``nvcrectl certification render`` prints them.

The run is rendered again on the cluster facts the bundle records (the Nodes and the
ResourceSlices, as the controller's informers hold them), through the controller's own
expansion; what a live object adds to the render (namespace, owner reference, the
``nvcre.nvidia.com/requested-test-scale`` annotation) is taken away again, and each Workflow is
written with the compiler's YAML emitter: the same bytes ``certification render --facts`` prints
for that Workflow, one document without ``---``, except that the user-info of every URL in it
(a ``sourceRepo`` with a token) is written as ``***`` (:func:`nvcre.compiler.redact.redact_value`):
a bundle leaves the cluster and is signed, so it must never carry a credential. The bundle
stores them as ``workflows/<name>.yaml`` and the Statement names them as subjects.

The controller created the live Workflows from the same render, and the API server then added
its own fields and the schema's defaults. :func:`matches_cluster` checks that every value the
render gives is the live object's (so the live one differs only by what the server added);
the predicate records the answer per category. When the render fails (a catalog that no longer
has the category, say), the live objects stand in, reduced to the fields a render writes, and
the predicate says so (``workflowSource: cluster``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_REQUESTED_TEST_SCALE

__all__ = ["WORKFLOW_DIR", "Rendered", "matches_cluster", "render_run", "rendered_workflow"]

WORKFLOW_DIR = "workflows"
#: the metadata the render writes, in the order it writes it
_RENDERED_METADATA = ("name", "labels", "annotations")
_RENDERED_TOP = ("apiVersion", "kind", "metadata", "spec")


def rendered_workflow(live: Mapping[str, Any]) -> dict[str, Any]:
    """A live Workflow reduced to the fields a render writes (placement and server fields dropped)."""
    meta = live.get("metadata") or {}
    metadata: dict[str, Any] = {}
    for key in _RENDERED_METADATA:
        if key not in meta:
            continue
        value = copy.deepcopy(meta[key])
        if key == "annotations" and isinstance(value, dict):
            value.pop(ANNOTATION_REQUESTED_TEST_SCALE, None)
        metadata[key] = value
    out: dict[str, Any] = {}
    for key in _RENDERED_TOP:
        if key == "metadata":
            out[key] = metadata
        elif key in live:
            out[key] = copy.deepcopy(live[key])
    return out


def matches_cluster(rendered: Any, live: Any) -> bool:
    """True when every value in ``rendered`` is the same in ``live`` (which may hold more)."""
    if isinstance(rendered, Mapping):
        return isinstance(live, Mapping) and all(k in live and matches_cluster(v, live[k]) for k, v in rendered.items())
    if isinstance(rendered, list):
        return isinstance(live, list) and len(rendered) == len(live) and all(matches_cluster(a, b) for a, b in zip(rendered, live))
    return bool(rendered == live) and isinstance(rendered, bool) == isinstance(live, bool)


@dataclass(frozen=True)
class Rendered:
    """The Workflow files of a bundle and where they came from."""

    files: tuple[tuple[str, bytes], ...]
    #: "render" (rendered again from the run) or "cluster" (the live objects, reduced)
    source: str
    #: Workflow name -> whether the render agrees with the live object ({} for "cluster")
    agrees: Mapping[str, bool]
    problem: str = ""


def _with_kind(objects: Sequence[Mapping[str, Any]], kind: str) -> list[dict[str, Any]]:
    """Items of a typed list may come without ``kind``; the facts reader sorts by it."""
    out = []
    for obj in objects:
        item = dict(obj)
        item.setdefault("kind", kind)
        out.append(item)
    return out


def render_run(
    run: Mapping[str, Any],
    live: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
    slices: Sequence[Mapping[str, Any]] = (),
) -> Rendered:
    """The run's Workflows as files, rendered again (or, when that fails, from the cluster).

    The render goes through the runtime's one door into the compiler: the controller's own
    expansion of the run on the same facts (Nodes and ResourceSlices, as its informers hold
    them), reduced to the render's document by :func:`rendered_workflow`.
    """
    from nvcre.compiler.emit import dump_yaml
    from nvcre.compiler.redact import redact_value
    from nvcre.runtime import compile as lowering

    kind = str(run.get("kind") or "Certification")
    try:
        facts = lowering.cluster_facts(_with_kind(nodes, "Node"), _with_kind(slices, "ResourceSlice"))
        if kind == "WorkloadRun":
            placed = [lowering.expand_workloadrun(run, facts)]
        else:
            placed = lowering.expand_certification(run, facts)
        documents = [rendered_workflow(w) for w in placed]
        problem = ""
    except lowering.CompileError as exc:
        documents, problem = [], (str(exc).splitlines() or ["render failed"])[0]
    by_name = {str((w.get("metadata") or {}).get("name")): w for w in live}
    names = [str((d.get("metadata") or {}).get("name")) for d in documents]
    if documents and set(by_name) <= set(names):
        agrees = {name: matches_cluster(doc, rendered_workflow(by_name[name])) for name, doc in zip(names, documents) if name in by_name}
        files = tuple((f"{WORKFLOW_DIR}/{name}.yaml", dump_yaml(redact_value(doc)).encode("utf-8")) for name, doc in zip(names, documents))
        return Rendered(files, "render", agrees)
    problem = problem or "the render names other Workflows than the cluster holds"
    reduced = [rendered_workflow(w) for w in sorted(live, key=lambda w: str((w.get("metadata") or {}).get("name")))]
    files = tuple((f"{WORKFLOW_DIR}/{(d['metadata']).get('name')}.yaml", dump_yaml(redact_value(d)).encode("utf-8")) for d in reduced)
    return Rendered(files, "cluster", {}, problem)
