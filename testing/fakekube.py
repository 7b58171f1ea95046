"""One in-memory API server behind the runtime's :class:`~nvcre.runtime.kube.client.Kube` seam.

:class:`MemoryKube` is what offline tests hand the reconcilers, the install steps, the lease
elector and the CLI instead of a cluster. It keeps objects by resource, namespace and name, and
answers as kube-apiserver does:

* every write gives the object a new ``resourceVersion``; a write carrying a stale one fails with
  409 :class:`~nvcre.runtime.kube.errors.Conflict`, a create of a taken name with
  :class:`~nvcre.runtime.kube.errors.AlreadyExists`, a read or write of a missing object with 404
  :class:`~nvcre.runtime.kube.errors.NotFound`;
* :meth:`MemoryKube.write_status` is the real client's loop (mutate, PUT the status, on 409
  read again and redo, nothing sent when nothing changed); writes to the main resource leave the
  status alone, as for every kind with a status subresource;
* a delete of an object with finalizers only marks it (``deletionTimestamp``); it goes once a
  write leaves it with none; a delete with a UID precondition spares a newer object;
* a CustomResourceDefinition is Established when stored and its kind is served from then on;
  a SelfSubjectAccessReview is answered (allowed unless its resource is in :attr:`denied`) and
  not stored; a watch replays the changes after the version it is given, then ends.

Every request is recorded twice: in :attr:`MemoryKube.calls` (verb, resource, namespace, name,
options), and in :attr:`MemoryKube.requests`, counted by verb and resource under the names the
real client's accounting uses (``get pods/log``, ``update jobs/status``, ``apply deployments``).
Events are kept in :attr:`MemoryKube.events`.

What a test scripts on top goes through three doors: :meth:`MemoryKube.react` runs a handler
before a verb on a resource (to fail a call, race a create or finish a stalled cleanup),
:meth:`MemoryKube.edit` and :meth:`MemoryKube.put` are someone else's writes (not recorded as
calls), and :meth:`MemoryKube.forbid` turns the fake into an offline client whose every call
fails the test.
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from nvcre.runtime.kube.accounting import RequestCounter
from nvcre.runtime.kube.client import ObjectList, StatusMutator, WatchEvent, WatchStream
from nvcre.runtime.kube.errors import AlreadyExists, ApiError, ApiNotServed, Conflict, NotFound
from nvcre.runtime.kube.resources import WELL_KNOWN, Resource

from .fakeapi import ESTABLISHED, crd_resources, field_matches, labels_match, log_excerpt, merge_patch, resource_of_kind, version_number
from .fakecalls import PASS, Call, ForbiddenCall, Reaction, Reactor, RecordedEvent, Replay

__all__ = ["PASS", "Call", "ForbiddenCall", "MemoryKube", "RecordedEvent", "Reactor"]

_STATUS_RETRIES = 8

Key = tuple[str, str, str, str]


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class MemoryKube:
    """The client seam over objects held in memory (see the module docstring)."""

    def __init__(
        self,
        *,
        resources: Iterable[Resource] = (),
        open_discovery: bool = True,
        unserved_groups: Iterable[str] = (),
    ) -> None:
        self._lock = threading.RLock()
        self._objects: dict[Key, dict[str, Any]] = {}
        self._served: dict[tuple[str, str], Resource] = dict(WELL_KNOWN)
        self._pinned = {(r.api_version, r.kind): r for r in resources}
        self._served.update(self._pinned)
        self._open = open_discovery
        self._unserved = frozenset(unserved_groups)
        self._version = 0
        self._history: list[tuple[int, str, str, WatchEvent]] = []
        self._reactions: list[Reaction] = []
        self._logs: dict[tuple[str, str, str], str] = {}
        self._forbidden: str | None = None
        #: every request, in order
        self.calls: list[Call] = []
        #: every Event written, in order
        self.events: list[RecordedEvent] = []
        #: requests by verb and resource, as the real client counts them
        self.requests = RequestCounter()
        #: resources a SelfSubjectAccessReview is refused for
        self.denied: set[str] = set()

    # ------------------------------------------------------------------ the test's side

    def forbid(self, reason: str = "this test runs offline") -> None:
        """From now on every call fails the test with :class:`ForbiddenCall`."""
        self._forbidden = reason

    def react(self, verb: str, resource: str, handler: Reactor, *, times: int | None = None) -> Callable[[], None]:
        """Run ``handler`` before the fake answers ``verb`` on ``resource`` (``*`` for any);
        the latest reactor goes first; ``times`` bounds how often it runs.

        Returns a function that takes the reactor away again."""
        reaction = Reaction(verb, resource, handler, times)
        self._reactions.insert(0, reaction)
        return lambda: self._reactions.remove(reaction) if reaction in self._reactions else None

    def put(self, obj: Mapping[str, Any], resource: Resource | None = None) -> dict[str, Any]:
        """Store ``obj`` as someone else wrote it (not a call); keeps a resourceVersion it has.

        Returns a copy of what is stored."""
        resource = resource or self.resource_for(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
        with self._lock:
            stored = self._typed(copy.deepcopy(dict(obj)), resource)
            meta = _meta(stored)
            meta.setdefault("uid", str(uuid.uuid4()))
            given = version_number(stored)
            if given:
                self._version = max(self._version, given)
            kind = "MODIFIED" if self._key(resource, meta) in self._objects else "ADDED"
            return copy.deepcopy(self._keep(resource, stored, kind, bump=not given))

    def edit(self, resource: Resource, name: str, namespace: str | None, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Someone else's write: ``change`` edits the live object in place; a new version follows.

        Returns a copy of what is stored."""
        with self._lock:
            live = self._live(resource, name, namespace)
            change(live)
            return copy.deepcopy(self._keep(resource, live, "MODIFIED"))

    def remove(self, resource: Resource, name: str, namespace: str | None = None) -> None:
        """The object goes at once, finalizers or not (the cluster's own doing; not a call)."""
        with self._lock:
            self._drop(resource, self._live(resource, name, namespace))

    def find(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The stored object itself (not a copy; a test may change it in place), or None."""
        with self._lock:
            return self._objects.get(self._key(resource, {"name": name, "namespace": namespace}))

    def objects_of(self, resource: Resource | None = None) -> list[dict[str, Any]]:
        """Copies of every stored object (of ``resource`` when given), in storage order."""
        with self._lock:
            return [
                copy.deepcopy(o) for key, o in self._objects.items() if resource is None or key[:2] == (resource.group, resource.plural)
            ]

    def set_log(self, namespace: str, pod: str, text: str, *, container: str | None = None) -> None:
        """What the pod's container has logged so far (lines with RFC 3339 timestamps first)."""
        self._logs[(namespace, pod, container or "")] = text

    def verbs(self) -> list[str]:
        """The calls as ``verb resource`` strings, in order."""
        return [str(call) for call in self.calls]

    def count(self, verb: str, resource: str) -> int:
        """How many ``verb`` calls reached ``resource``."""
        return sum(1 for call in self.calls if call.verb == verb and call.resource == resource)

    # ------------------------------------------------------------------ discovery

    def resource_for(self, api_version: str, kind: str) -> Resource:
        self._check_allowed("resource_for")
        group = api_version.rpartition("/")[0]
        if group in self._unserved:
            raise ApiNotServed(404, "NotFound", f"the server does not serve the API {api_version} (kind {kind})")
        with self._lock:
            known = self._served.get((api_version, kind))
        if known is not None:
            return known
        if not self._open or not kind:
            raise ApiNotServed(404, "NotFound", f"the server has no resource for kind {kind} in {api_version}")
        return resource_of_kind(api_version, kind)

    # ------------------------------------------------------------------ reads

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        answer = self._begin("get", resource, namespace, name)
        if answer is not PASS:
            return dict(answer)
        with self._lock:
            return copy.deepcopy(self._live(resource, name, namespace))

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        answer = self._begin("list", resource, namespace, "", label_selector=label_selector, field_selector=field_selector)
        if answer is not PASS:
            return answer if isinstance(answer, ObjectList) else ObjectList(tuple(answer), str(self._version))
        with self._lock:
            items = tuple(
                copy.deepcopy(obj)
                for key, obj in self._objects.items()
                if key[:2] == (resource.group, resource.plural)
                and (not namespace or not resource.namespaced or key[2] == namespace)
                and labels_match(label_selector, _meta(obj).get("labels") or {})
                and field_matches(field_selector, obj)
            )
            return ObjectList(items, str(self._version))

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        timeout_seconds: int = 300,
    ) -> WatchStream:
        answer = self._begin("watch", resource, namespace, "", resource_version=resource_version)
        if answer is not PASS:
            stream: WatchStream = answer
            return stream
        since = int(resource_version) if resource_version.isdigit() else 0
        plural = f"{resource.group}/{resource.plural}"
        with self._lock:
            changes = [
                copy.deepcopy(event)
                for version, where, ns, event in self._history
                if version > since and where == plural and (not namespace or not resource.namespaced or ns == namespace)
            ]
        return Replay(changes)

    def pod_log(
        self,
        name: str,
        namespace: str,
        *,
        container: str | None = None,
        timestamps: bool = False,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
        since_time: str | None = None,
    ) -> str:
        options = {"container": container, "timestamps": timestamps, "tail_lines": tail_lines, "since_time": since_time}
        answer = self._begin("get", _PODS_LOG, namespace, name, **options, limit_bytes=limit_bytes)
        if answer is not PASS:
            return str(answer)
        text = self._logs.get((namespace, name, container or ""), self._logs.get((namespace, name, "")))
        if text is None:
            with self._lock:
                self._live(_PODS, name, namespace)
            return ""
        return log_excerpt(text, since_time=since_time, tail_lines=tail_lines, timestamps=timestamps, limit_bytes=limit_bytes)

    # ------------------------------------------------------------------ writes

    def create(self, obj: Mapping[str, Any], resource: Resource | None = None) -> dict[str, Any]:
        resource = resource or self.resource_for(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
        meta = _meta(obj)
        name = str(meta.get("name") or "")
        if not name and meta.get("generateName"):
            name = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
        answer = self._begin("create", resource, meta.get("namespace"), name, body=obj)
        if answer is not PASS:
            return dict(answer)
        if resource.kind == "SelfSubjectAccessReview":
            attributes = (obj.get("spec") or {}).get("resourceAttributes") or {}
            return {**copy.deepcopy(dict(obj)), "status": {"allowed": attributes.get("resource") not in self.denied}}
        with self._lock:
            made = self._typed(copy.deepcopy(dict(obj)), resource)
            made_meta = _meta(made)
            made_meta["name"] = name
            if self._key(resource, made_meta) in self._objects:
                raise AlreadyExists(409, "AlreadyExists", f'{resource.plural} "{name}" already exists')
            for server_side in ("resourceVersion", "deletionTimestamp"):
                made_meta.pop(server_side, None)
            made_meta.update(uid=str(uuid.uuid4()), creationTimestamp=made_meta.get("creationTimestamp") or _now(), generation=1)
            return copy.deepcopy(self._keep(resource, made, "ADDED"))

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        resource = self.resource_for(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
        meta = _meta(obj)
        answer = self._begin("apply", resource, meta.get("namespace"), str(meta.get("name") or ""), body=obj)
        if answer is not PASS:
            return dict(answer)
        body = {key: value for key, value in obj.items() if key != "status"}
        with self._lock:
            live = self._objects.get(self._key(resource, meta))
            if live is None:
                made = self._typed(copy.deepcopy(body), resource)
                _meta(made).update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
                return copy.deepcopy(self._keep(resource, made, "ADDED"))
            merged = merge_patch(live, body)
            return copy.deepcopy(self._update(resource, live, merged))

    def replace(self, resource: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = _meta(obj)
        name = str(meta.get("name") or "")
        answer = self._begin("update", resource, meta.get("namespace"), name, body=obj)
        if answer is not PASS:
            return dict(answer)
        with self._lock:
            live = self._live(resource, name, meta.get("namespace"))
            self._precondition(resource, live, obj)
            body = copy.deepcopy(dict(obj))
            body["metadata"] = {**_meta(body), "uid": _meta(live).get("uid"), "creationTimestamp": _meta(live).get("creationTimestamp")}
            return copy.deepcopy(self._update(resource, live, body))

    def merge_patch(self, resource: Resource, name: str, namespace: str | None, patch: Mapping[str, Any]) -> dict[str, Any]:
        answer = self._begin("patch", resource, namespace, name, body=patch)
        if answer is not PASS:
            return dict(answer)
        with self._lock:
            live = self._live(resource, name, namespace)
            self._precondition(resource, live, patch)
            return copy.deepcopy(self._update(resource, live, merge_patch(live, patch)))

    def write_status(self, resource: Resource, obj: Mapping[str, Any], mutate: StatusMutator) -> dict[str, Any] | None:
        """The real client's loop: mutate a copy, PUT the status; on 409 read again and redo."""
        meta = _meta(obj)
        name, namespace = str(meta.get("name") or ""), meta.get("namespace")
        status_of = Resource(resource.group, resource.version, f"{resource.plural}/status", resource.kind, resource.namespaced)
        current: Mapping[str, Any] = obj
        for _ in range(_STATUS_RETRIES):
            old = current.get("status") or {}
            new = mutate(copy.deepcopy(dict(old)), current)
            if new is None or new == old:
                return None
            try:
                answer = self._begin("update", status_of, namespace, name, body={**current, "status": new})
                if answer is not PASS:
                    return None if answer is None else dict(answer)
                with self._lock:
                    live = self._live(resource, name, namespace)
                    self._precondition(resource, live, current)
                    live["status"] = copy.deepcopy(new)
                    return copy.deepcopy(self._keep(resource, live, "MODIFIED"))
            except Conflict:
                current = self.get(resource, name, namespace)
        raise Conflict(409, "Conflict", f"status of {resource.kind} {namespace}/{name} kept changing under us")

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        propagation: str = "Background",
    ) -> bool:
        answer = self._begin("delete", resource, namespace, name, uid=uid, propagation=propagation)
        if answer is not PASS:
            return bool(answer)
        with self._lock:
            live = self._objects.get(self._key(resource, {"name": name, "namespace": namespace}))
            if live is None or (uid and _meta(live).get("uid") != uid):
                return False
            if _meta(live).get("finalizers"):
                if not _meta(live).get("deletionTimestamp"):
                    _meta(live)["deletionTimestamp"] = _now()
                    self._keep(resource, live, "MODIFIED")
                return True
            self._drop(resource, live)
            return True

    def emit_event(self, involved: Mapping[str, Any], *, type: str, reason: str, message: str, component: str) -> None:
        """Record the Event; as the real client, a refused write is dropped, never raised."""
        meta = _meta(involved)
        namespace = str(meta.get("namespace") or "default")
        try:
            answer = self._begin("create", _EVENTS, namespace, "", reason=reason)
        except ApiError:
            return
        if answer is not PASS:
            return
        kind = str(involved.get("kind") or "")
        self.events.append(RecordedEvent(type, reason, message, kind, namespace, str(meta.get("name") or ""), component))

    # ------------------------------------------------------------------ inside the server

    def _check_allowed(self, what: str) -> None:
        if self._forbidden is not None:
            raise ForbiddenCall(f"no API call expected ({what}): {self._forbidden}")

    def _begin(self, verb: str, resource: Resource, namespace: str | None, name: str, **options: Any) -> Any:
        """Record the call, then let the first matching reactor answer it."""
        self._check_allowed(f"{verb} {resource.plural}")
        if "body" in options:  # as sent: a later change by the caller does not rewrite the log
            options["body"] = copy.deepcopy(options["body"])
        call = Call(verb, resource.plural, namespace or "", name, resource.group, options)
        with self._lock:
            self.calls.append(call)
            self.requests.record(verb, resource.plural)
            reactions = list(self._reactions)
        for reaction in reactions:
            if not reaction.matches(call):
                continue
            answer = reaction.handler(call)
            if answer is not PASS:
                return answer
        if resource.group in self._unserved:
            raise NotFound(404, "NotFound", f"the server could not find the requested resource ({resource.plural})")
        return PASS

    def _key(self, resource: Resource, meta: Mapping[str, Any]) -> Key:
        namespace = str(meta.get("namespace") or "") if resource.namespaced else ""
        return (resource.group, resource.plural, namespace, str(meta.get("name") or ""))

    def _live(self, resource: Resource, name: str, namespace: str | None) -> dict[str, Any]:
        found = self._objects.get(self._key(resource, {"name": name, "namespace": namespace}))
        if found is None:
            raise NotFound(404, "NotFound", f'{resource.plural} "{name}" not found')
        return found

    @staticmethod
    def _typed(obj: dict[str, Any], resource: Resource) -> dict[str, Any]:
        obj.setdefault("apiVersion", resource.api_version)
        obj.setdefault("kind", resource.kind)
        obj.setdefault("metadata", {})
        if not resource.namespaced:
            obj["metadata"].pop("namespace", None)
        return obj

    @staticmethod
    def _precondition(resource: Resource, live: Mapping[str, Any], body: Mapping[str, Any]) -> None:
        wanted = str(_meta(body).get("resourceVersion") or "")
        if wanted and wanted != str(_meta(live).get("resourceVersion") or ""):
            name = _meta(live).get("name")
            raise Conflict(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {resource.plural} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again",
            )

    def _update(self, resource: Resource, live: dict[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
        """A write to the main resource: status stays, generation follows the spec."""
        new = copy.deepcopy(dict(body))
        if "status" in live:
            new["status"] = copy.deepcopy(live["status"])
        else:
            new.pop("status", None)
        meta = _meta(new)
        meta["resourceVersion"] = _meta(live).get("resourceVersion")
        if {k: v for k, v in new.items() if k not in ("metadata", "status")} != {
            k: v for k, v in live.items() if k not in ("metadata", "status")
        }:
            meta["generation"] = int(_meta(live).get("generation") or 0) + 1
        if _meta(live).get("deletionTimestamp"):
            meta["deletionTimestamp"] = _meta(live)["deletionTimestamp"]
        if new == live:
            return live
        live.clear()
        live.update(new)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._drop(resource, live)
            return live
        return self._keep(resource, live, "MODIFIED")

    def _keep(self, resource: Resource, obj: dict[str, Any], kind: str, *, bump: bool = True) -> dict[str, Any]:
        meta = _meta(obj)
        if bump:
            self._version += 1
            meta["resourceVersion"] = str(self._version)
        if resource.kind == "CustomResourceDefinition":
            self._establish(obj)
        self._objects[self._key(resource, meta)] = obj
        self._history.append(
            (
                version_number(obj),
                f"{resource.group}/{resource.plural}",
                str(meta.get("namespace") or ""),
                WatchEvent(kind, copy.deepcopy(obj)),
            )
        )
        return obj

    def _drop(self, resource: Resource, obj: dict[str, Any]) -> None:
        meta = _meta(obj)
        self._objects.pop(self._key(resource, meta), None)
        self._version += 1
        if resource.kind == "CustomResourceDefinition":
            names = (obj.get("spec") or {}).get("names") or {}
            group = (obj.get("spec") or {}).get("group")
            self._served = {
                key: r
                for key, r in self._served.items()
                if (r.group, r.plural) != (group, names.get("plural")) or key in WELL_KNOWN or key in self._pinned
            }
        gone = WatchEvent("DELETED", copy.deepcopy(obj))
        self._history.append((self._version, f"{resource.group}/{resource.plural}", str(meta.get("namespace") or ""), gone))

    def _establish(self, crd: dict[str, Any]) -> None:
        """As the apiextensions server: the CRD is Established and its kind served."""
        status = crd.setdefault("status", {})
        if not status.get("conditions"):
            status["conditions"] = copy.deepcopy(ESTABLISHED)
        for resource in crd_resources(crd):
            self._served.setdefault((resource.api_version, resource.kind), resource)


_PODS = Resource("", "v1", "pods", "Pod")
_PODS_LOG = Resource("", "v1", "pods/log", "Pod")
_EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
