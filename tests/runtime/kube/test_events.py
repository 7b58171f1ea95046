"""The Event body: a DNS-subdomain name, the regarding object, bounded fields, the note capped."""

from __future__ import annotations

import re

from nvcre.runtime.kube.events import EVENT_NOTE_LIMIT, event_body

SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _event(name: str, namespace: str | None, message: str = "m", reason: str = "R") -> dict:
    meta = {"name": name, "uid": "u1", **({"namespace": namespace} if namespace else {})}
    return event_body(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta},
        type="Warning",
        reason=reason,
        message=message,
        component="nvcre-controller",
        instance="",
    )


def test_a_namespaced_object_gets_its_event_in_its_namespace_with_a_valid_name() -> None:
    body = _event("watched", "ns")
    assert body["metadata"]["namespace"] == "ns"
    assert SUBDOMAIN.fullmatch(body["metadata"]["name"]) and body["metadata"]["name"].startswith("watched.")
    assert body["regarding"] == {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "watched", "uid": "u1"}
    assert (body["reportingController"], body["reportingInstance"], body["action"]) == ("nvcre-controller", "nvcre-controller", "Reconcile")
    assert "apiVersion" not in body and "kind" not in body


def test_a_cluster_scoped_object_with_the_longest_name_still_gets_a_valid_event_in_default() -> None:
    body = _event("n" * 253, None)
    assert body["metadata"]["namespace"] == "default"
    assert len(body["metadata"]["name"]) <= 253 and SUBDOMAIN.fullmatch(body["metadata"]["name"])


def test_the_note_is_capped_in_utf8_bytes_and_the_reason_in_characters() -> None:
    body = _event("x", "ns", message="é" * 2000, reason="R" * 300)
    assert len(body["note"].encode("utf-8")) <= EVENT_NOTE_LIMIT and body["note"].endswith("[truncated]")
    assert len(body["reason"]) == 128


def test_two_emissions_get_two_names() -> None:
    assert _event("x", "ns")["metadata"]["name"] != _event("x", "ns")["metadata"]["name"]
