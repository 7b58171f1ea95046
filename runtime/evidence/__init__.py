"""Evidence bundles: a run's verdict, measurements and cluster identity as files that leave the cluster.

A bundle is a directory holding the reports (``report.json``, ``report.txt``, ``junit.xml``,
``report.html``), the rendered Workflows and the cluster identity it attests to, and an in-toto
Statement (``statement.json``) whose subjects are the digests of all of those files and whose
predicate (:data:`~nvcre.runtime.evidence.predicate.PREDICATE_TYPE`) carries the verdict and the
measurements. With a signing key the Statement is also wrapped in a DSSE envelope
(``statement.dsse.json``, and the same signature as a Sigstore bundle, ``statement.sigstore.json``). ``docs/evidence.md``
describes the format; :mod:`.bundle` writes and checks bundles, :mod:`.compare` compares them.
"""

from __future__ import annotations

from .errors import EvidenceError, Mismatch
from .predicate import PREDICATE_TYPE

__all__ = ["EvidenceError", "Mismatch", "PREDICATE_TYPE"]
