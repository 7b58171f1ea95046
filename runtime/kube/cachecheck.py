"""Checked-cache mode: catch a reconciler that changes an object it read from an informer cache.

Cached objects are shared, not copied: every reader gets the very dict the informer stored, so
a reconciler that edits one in place (instead of copying it first) silently changes what every
other reader sees, and what the next status write compares against. With the environment
variable ``NVCRE_CHECKED_CACHE=1`` (the integration tests set it; production never does, as it
costs a hash per cached object), each :class:`~nvcre.runtime.kube.informers.Store` fingerprints
every object it files and checks the fingerprint again when the object is replaced, removed or
the informer stops. A mismatch is logged at ERROR, naming the resource and the object, which
fails the test that caused it. It is the runtime's twin of the compiler's purity check.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["ENV_VAR", "enabled", "fingerprint", "report_mutation"]

ENV_VAR = "NVCRE_CHECKED_CACHE"

log = logging.getLogger("nvcre.runtime.kube.cache")


def enabled() -> bool:
    """Whether stores created now check their objects (read once per store)."""
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes")


def fingerprint(obj: Mapping[str, Any]) -> bytes:
    """A digest of the object's content (key order does not matter)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def report_mutation(resource: str, key: tuple[str, str], when: str) -> None:
    """Log that the cached object under ``key`` changed in place since it was filed."""
    namespace, name = key
    where = f"{namespace}/{name}" if namespace else name
    log.error(
        "cached object changed in place",
        extra={"resource": resource, "object": where, "detected": when, "hint": "copy an object read from a cache before changing it"},
    )
