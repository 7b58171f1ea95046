"""The API server's side of a scale run: what it served, what it holds, its largest answers.

``controller_scale.py`` counts the requests the controller sends; this module reads the other
end, the kube-apiserver's own ``/metrics``, before a scenario and after its verdict:

* requests served by verb (LIST, WATCH, GET, POST, PUT, PATCH, DELETE, ...) and resource, from
  ``apiserver_request_total``: every client's, the simulated kubelets', scheduler's and
  workload controllers' as well as nvcre's; those answered with an error (HTTP 400 and up: a
  conflict, a missing object) also apart;
* objects held in storage per resource at the end and their estimated size
  (``apiserver_resource_objects`` and ``apiserver_resource_size_estimate_bytes``; the server
  refreshes them about once a minute, so a short scenario reads its start; the name before
  Kubernetes 1.34, ``apiserver_storage_objects``, where the newer one is not served);
* objects that LIST answers returned, from the watch cache and from etcd
  (``apiserver_cache_list_returned_objects_total``, ``apiserver_storage_list_returned_objects_total``);
* watches open at the end (``apiserver_longrunning_requests{verb="WATCH"}``) and watch events
  sent during the scenario (``apiserver_watch_events_total``);
* the largest answers of the scenario: for each verb and resource, the smallest bucket bound of
  ``apiserver_response_sizes`` that holds every answer given during the scenario (WATCH and
  CONNECT are streams, whose size is the whole stream's, and are left out);
* the server's resident memory (``process_resident_memory_bytes``).

Pure parsing and arithmetic, plus one function that fetches the text with an admin client.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ApiServerScrape", "fetch", "parse", "summarise"]

Key = tuple[str, str]  # (verb, resource[/subresource])

_OBJECTS = ("apiserver_resource_objects", "apiserver_storage_objects")
_LIST_RETURNED = ("apiserver_cache_list_returned_objects_total", "apiserver_storage_list_returned_objects_total")
_STREAMS = ("WATCH", "CONNECT")


@dataclass
class ApiServerScrape:
    """The samples of one kube-apiserver ``/metrics`` answer that a scale run reads."""

    requests: dict[Key, float] = field(default_factory=dict)
    #: the part of ``requests`` answered with HTTP 400 or above, by (verb, resource, code)
    errors: dict[tuple[str, str, str], float] = field(default_factory=dict)
    objects: dict[str, float] = field(default_factory=dict)
    object_bytes: dict[str, float] = field(default_factory=dict)
    list_returned: dict[str, float] = field(default_factory=dict)
    watches_open: float = 0.0
    watch_events: dict[str, float] = field(default_factory=dict)
    #: per (verb, resource): cumulative count per bucket upper bound, ``+Inf`` included
    size_buckets: dict[Key, dict[float, float]] = field(default_factory=dict)
    resident_bytes: float = 0.0


def _qualified(labels: Mapping[str, str]) -> str:
    resource, group = labels.get("resource", ""), labels.get("group", "")
    return f"{resource}.{group}" if group else resource


def _add(into: dict[str, float], key: str, value: float) -> None:
    into[key] = into.get(key, 0.0) + value


def _resource(labels: Mapping[str, str]) -> str:
    resource = labels.get("resource", "") or "-"
    sub = labels.get("subresource", "")
    return f"{resource}/{sub}" if sub else resource


def parse(text: str) -> ApiServerScrape:
    """Read ``text`` (the Prometheus text format the API server serves)."""
    from prometheus_client.parser import text_string_to_metric_families

    out = ApiServerScrape()
    objects: dict[str, dict[str, float]] = {name: {} for name in _OBJECTS}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name, labels, value = sample.name, sample.labels, float(sample.value)
            if name == "apiserver_request_total":
                key = (labels.get("verb", ""), _resource(labels))
                out.requests[key] = out.requests.get(key, 0.0) + value
                code = labels.get("code", "")
                if code[:1] in ("4", "5"):
                    failed = (*key, code)
                    out.errors[failed] = out.errors.get(failed, 0.0) + value
            elif name in objects:
                if value >= 0:  # -1: the server could not count them
                    _add(objects[name], _qualified(labels), value)
            elif name == "apiserver_resource_size_estimate_bytes":
                if value >= 0:
                    _add(out.object_bytes, _qualified(labels), value)
            elif name in _LIST_RETURNED:
                _add(out.list_returned, _qualified(labels), value)
            elif name == "apiserver_longrunning_requests" and labels.get("verb") == "WATCH":
                out.watches_open += value
            elif name == "apiserver_watch_events_total":
                # labelled by resource since Kubernetes 1.32, by kind before
                _add(out.watch_events, _qualified(labels) if "resource" in labels else labels.get("kind", ""), value)
            elif name == "apiserver_response_sizes_bucket":
                key = (labels.get("verb", ""), _resource(labels))
                bound = math.inf if labels.get("le") == "+Inf" else float(labels.get("le", "nan"))
                buckets = out.size_buckets.setdefault(key, {})
                buckets[bound] = buckets.get(bound, 0.0) + value
            elif name == "process_resident_memory_bytes":
                out.resident_bytes = value
    # the newer name where it is served, else the older one
    out.objects = objects[_OBJECTS[0]] or objects[_OBJECTS[1]]
    return out


def _grew(after: Mapping[Any, float], before: Mapping[Any, float]) -> dict[Any, float]:
    out = {key: value - before.get(key, 0.0) for key, value in after.items()}
    return {key: value for key, value in out.items() if value > 0}


def largest_bound(after: Mapping[float, float], before: Mapping[float, float]) -> float | None:
    """The smallest bucket bound holding every answer given between the two scrapes (``inf``
    when some answer was larger than the last finite bound; None when there was none)."""
    grown = {bound: after.get(bound, 0.0) - before.get(bound, 0.0) for bound in after}
    total = grown.get(math.inf, 0.0)
    if total <= 0:
        return None
    for bound in sorted(grown):
        if grown[bound] >= total:
            return bound
    return math.inf


def _mib(value: float) -> float:
    return round(value / (1024 * 1024), 1)


def summarise(before: ApiServerScrape, after: ApiServerScrape, *, jobs: int, top: int = 8) -> dict[str, Any]:
    """The scenario's growth on the API server's side, as one JSON-ready mapping."""
    requests = _grew(after.requests, before.requests)
    by_verb: dict[str, float] = {}
    for (verb, _), value in requests.items():
        by_verb[verb] = by_verb.get(verb, 0.0) + value
    largest = []
    for key, buckets in after.size_buckets.items():
        if key[0] in _STREAMS:
            continue
        bound = largest_bound(buckets, before.size_buckets.get(key, {}))
        if bound is not None:
            largest.append((bound, key))
    largest.sort(key=lambda item: (-item[0], item[1]))
    total = sum(requests.values())
    lists = {f"{resource}": int(v) for (verb, resource), v in sorted(requests.items()) if verb == "LIST"}
    return {
        "requests": int(total),
        "requests_per_job": round(total / jobs, 2) if jobs else None,
        "requests_by_verb": {verb: int(v) for verb, v in sorted(by_verb.items())},
        "lists_by_resource": lists,
        "watches_started_by_resource": {r: int(v) for (verb, r), v in sorted(requests.items()) if verb == "WATCH"},
        "errors_by_code": {
            f"{verb} {r} {code}": int(v)
            for (verb, r, code), v in sorted(_grew(after.errors, before.errors).items(), key=lambda kv: -kv[1])[:top]
        },
        "top_requests": {f"{verb} {r}": int(v) for (verb, r), v in sorted(requests.items(), key=lambda kv: -kv[1])[:top]},
        "objects_held": {r: int(v) for r, v in sorted(after.objects.items(), key=lambda kv: -kv[1])[:top] if v > 0},
        "objects_held_total": int(sum(after.objects.values())),
        "objects_held_mib": _mib(sum(after.object_bytes.values())),
        "list_objects_returned": int(sum(_grew(after.list_returned, before.list_returned).values())),
        "watches_open": int(after.watches_open),
        "watch_events_sent": int(sum(_grew(after.watch_events, before.watch_events).values())),
        "largest_answers": [
            {"request": f"{verb} {resource}", "at_most_bytes": None if math.isinf(bound) else int(bound)}
            for bound, (verb, resource) in largest[:top]
        ],
        "resident_mib": _mib(after.resident_bytes),
    }


def fetch(api_client: Any, timeout: float = 60.0) -> str:
    """The API server's ``/metrics`` text through ``api_client`` (a ``kubernetes`` ApiClient
    with the admin credentials of the simulated cluster)."""
    host = api_client.configuration.host.rstrip("/")
    headers = {"Accept": "text/plain"}
    api_client.update_params_for_auth(headers, None, ["BearerToken"], "/metrics", "GET", None)
    response = api_client.rest_client.request("GET", f"{host}/metrics", headers=headers, _request_timeout=timeout)
    raw = response.read() if hasattr(response, "read") else response.data
    if response.status >= 300:
        raise RuntimeError(f"the API server answered /metrics with HTTP {response.status}")
    return bytes(raw).decode("utf-8")
