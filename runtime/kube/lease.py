"""Leader election on a coordination.k8s.io Lease.

One replica holds the Lease and renews it every ``retry_period``; the others poll it. A holder
that stops renewing is considered gone once ``lease_duration`` has passed *on the observer's
own clock* since the record last changed (no trust in clock agreement across machines). Every
write carries the resourceVersion read, so two candidates can never both win. A holder that
shuts down cleanly releases the Lease, so a standby takes over at its next poll.

While it holds the Lease, a replica renews with one request: a PUT of the Lease as the server
last answered it (its resourceVersion guards the write). Only when that is refused (someone
else wrote the Lease) does it read the Lease again and decide as a candidate would.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .client import Kube
from .errors import ApiError, Conflict, NotFound
from .resources import LEASES

__all__ = ["LeaderElector"]

log = logging.getLogger("nvcre.runtime.kube.lease")


def _micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Campaigns for one Lease; see the module docstring."""

    def __init__(
        self,
        kube: Kube,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("leader election needs retry_period < renew_deadline < lease_duration")
        self.kube = kube
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self._clock = clock
        self.leading = threading.Event()
        self._observed: tuple[str, str] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        #: the Lease as the server answered our last successful write, while we hold it
        self._held: dict[str, Any] | None = None

    # ------------------------------------------------------------------ one step

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this replica holds the Lease afterwards."""
        now = self._clock()
        held, self._held = self._held, None
        if held is not None:
            transitions = int((held.get("spec") or {}).get("leaseTransitions") or 0)
            try:
                self._held = self.kube.replace(LEASES, self._lease_body(held, transitions=transitions, keep_acquire=True))
            except ApiError:
                pass  # someone else wrote it (or it is gone): read it and decide below
            else:
                self._last_renew = now
                return True
        try:
            lease = self.kube.get(LEASES, self.name, self.namespace)
        except NotFound:
            try:
                self._held = self.kube.create(self._lease_body(None, transitions=0), LEASES)
            except ApiError:
                return False
            self._last_renew = now
            return True
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        if record != self._observed:
            self._observed = record
            self._observed_at = now
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and now - self._observed_at < duration:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        if holder != self.identity:
            transitions += 1
        body = self._lease_body(lease, transitions=transitions, keep_acquire=holder == self.identity)
        try:
            self._held = self.kube.replace(LEASES, body)
        except (Conflict, ApiError):
            return False
        self._last_renew = now
        return True

    def _lease_body(self, lease: dict[str, Any] | None, *, transitions: int, keep_acquire: bool = False) -> dict[str, Any]:
        now = _micro_now()
        spec = dict((lease or {}).get("spec") or {})
        acquire = spec.get("acquireTime") if keep_acquire and spec.get("acquireTime") else now
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if lease is not None:
            metadata["resourceVersion"] = (lease.get("metadata") or {}).get("resourceVersion")
        body: dict[str, Any] = {
            "metadata": metadata,
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": max(1, round(self.lease_duration)),
                "acquireTime": acquire,
                "renewTime": now,
                "leaseTransitions": transitions,
            },
        }
        body.update({key: lease[key] for key in ("apiVersion", "kind") if lease and key in lease})
        return body

    def release(self) -> None:
        """Give the Lease up (clean shutdown), so a standby need not wait for it to expire."""
        if not self.leading.is_set():
            return
        self.leading.clear()
        self._held = None
        try:
            lease = self.kube.get(LEASES, self.name, self.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            lease["spec"] = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": _micro_now()}
            self.kube.replace(LEASES, lease)
        except ApiError as exc:
            log.warning("could not release the lease", extra={"error": str(exc)[:200]})

    # ------------------------------------------------------------------ loop

    def run(self, stop: threading.Event) -> None:
        """Campaign until ``stop`` is set; call the callbacks on gaining and losing the Lease."""
        while not stop.is_set():
            ok = False
            try:
                ok = self.try_acquire_or_renew()
            except Exception as exc:  # noqa: BLE001 - a failed attempt is retried
                log.warning("lease attempt failed", extra={"error": str(exc)[:200]})
            if ok and not self.leading.is_set():
                self.leading.set()
                log.info("became leader", extra={"identity": self.identity, "lease": self.name})
                if self.on_started_leading:
                    self.on_started_leading()
            elif not ok and self.leading.is_set() and self._clock() - self._last_renew > self.renew_deadline:
                self.leading.clear()
                log.warning("lost leadership", extra={"identity": self.identity, "lease": self.name})
                if self.on_stopped_leading:
                    self.on_stopped_leading()
            stop.wait(self.retry_period)
        self.release()
