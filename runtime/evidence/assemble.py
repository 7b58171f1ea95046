"""From the gathered objects and the verdict to a bundle's files: the one function that decides what a bundle holds.

Pure: the same objects and verdict give the same bytes (no clock, no environment, no cluster).
The reports are the project's own (the JSON report as ``report -o json`` prints it, the text
report, JUnit) plus the HTML report; the predicate adds the measurements and times.

Nothing in a bundle may carry a credential: a bundle leaves the cluster, and once signed a
secret in it could not be taken out without breaking the signature. So every file is redacted
here, before anything is digested or signed: the user-info of every URL (``sourceRepo:
https://user:TOKEN@host/...`` and the like, see :mod:`nvcre.compiler.redact`) becomes ``***``,
in the rendered Workflows (:func:`~.workflows.render_run`), the predicate, the identity and
every report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import dsse
from .bundle import BundleContents, compose_bundle
from .identity import cluster_identity, node_names_of
from .predicate import build_predicate, catalog_summary
from .workflows import render_run

__all__ = ["Objects", "assemble"]


@dataclass(frozen=True)
class Objects:
    """The objects a bundle is built from, as the API server returned them."""

    run: Mapping[str, Any]
    workflows: Sequence[Mapping[str, Any]]
    jobs: Sequence[Mapping[str, Any]] = ()
    measurements: Sequence[Mapping[str, Any]] = ()
    nodes: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    #: what render detection reads besides the Nodes (DRA ResourceSlices)
    resource_slices: Sequence[Mapping[str, Any]] = ()


def _tools() -> dict[str, str]:
    from nvcre import __version__

    return {"nvcrectl": __version__}


def assemble(objects: Objects, verdict: Any, *, signer: dsse.Signer | None = None) -> BundleContents:
    """Every file of the bundle of one run, credentials redacted."""
    from nvcre.compiler.redact import redact_markup, redact_text, redact_value
    from nvcre.runtime.report import json as report_json
    from nvcre.runtime.report import junit as report_junit
    from nvcre.runtime.report import text as report_text

    from .html import render_html

    workflows = sorted(objects.workflows, key=lambda w: str((w.get("metadata") or {}).get("name")))
    identity = redact_value(cluster_identity(node_names_of(verdict), objects.nodes, verdict.platform))
    rendered = render_run(objects.run, workflows, objects.nodes, objects.resource_slices)
    predicate = redact_value(
        build_predicate(
            run=objects.run,
            workflows=workflows,
            jobs=objects.jobs,
            measurements=objects.measurements,
            verdict=verdict,
            catalog=catalog_summary(),
            tools=_tools(),
            rendered=rendered,
        )
    )
    reports = {
        # the bytes `certification report -o json` prints for one run (credentials redacted)
        "report.json": (json.dumps(redact_value(report_json.to_dict(verdict)), indent=2, sort_keys=True) + "\n").encode("utf-8"),
        "report.txt": redact_text(report_text.render(verdict)).encode("utf-8"),
        "junit.xml": redact_markup(report_junit.dumps([verdict])).encode("utf-8"),
        "report.html": redact_markup(render_html(verdict, predicate, identity)).encode("utf-8"),
    }
    return compose_bundle(workflows=rendered.files, identity=identity, reports=reports, predicate=predicate, signer=signer)
