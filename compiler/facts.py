"""Cluster facts: the Kubernetes objects detection reads, loaded from a YAML or JSON file.

Everything the compiler would otherwise learn by talking to a cluster (platform, GPU model,
node count, NIC resources, plugin versions) is read from plain Kubernetes objects instead:
Nodes, ``resource.k8s.io`` ResourceSlices and Pods, exactly as ``kubectl get ... -o yaml``
prints them. A file may hold a multi-document stream, ``kind: List`` documents, typed lists
(``NodeList``...) or any mix. Objects of other kinds are skipped with an info diagnostic.

Loading is strict: malformed input raises :class:`CompileError` carrying every problem, each
with a path such as ``facts.yaml: items[3].metadata.name``. Loaded objects are plain dicts,
sorted by name, so the order of the file never changes a result.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from .diagnostics import CompileError, Diagnostic, error, format_path, info
from .yamlio import Limits, check_nesting, check_size, make_loader, plain_data_problems, read_text

if TYPE_CHECKING:
    from fractions import Fraction

__all__ = [
    "ClusterFacts",
    "load_facts",
    "facts_from_text",
    "facts_from_documents",
    "facts_from_objects",
    "parse_quantity",
    "name_of",
    "labels_of",
    "annotations_of",
    "provider_id",
    "allocatable",
    "advertised",
    "taints_of",
    "is_cordoned",
    "is_ready",
    "device_attributes",
]

_CORE_KINDS = {"Node": "nodes", "Pod": "pods"}
_RESOURCE_GROUP = "resource.k8s.io"


@dataclass(frozen=True)
class ClusterFacts:
    """Nodes, ResourceSlices and Pods as plain dicts, each tuple sorted by object name.

    ``source`` names where the facts came from (shown in messages); ``diagnostics`` holds
    the notes made while loading (skipped kinds). Build instances with
    :func:`facts_from_documents` so the objects are validated; the constructor only sorts.
    Detection never mutates the dicts.
    """

    nodes: tuple[dict[str, Any], ...] = ()
    resource_slices: tuple[dict[str, Any], ...] = ()
    pods: tuple[dict[str, Any], ...] = ()
    source: str = ""
    diagnostics: tuple[Diagnostic, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(sorted(self.nodes, key=name_of)))
        object.__setattr__(self, "resource_slices", tuple(sorted(self.resource_slices, key=name_of)))
        object.__setattr__(self, "pods", tuple(sorted(self.pods, key=_namespaced_key)))
        object.__setattr__(self, "diagnostics", tuple(self.diagnostics))

    def node(self, name: str) -> dict[str, Any] | None:
        for node in self.nodes:
            if name_of(node) == name:
                return node
        return None


# --------------------------------------------------------------------------- accessors


def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _namespaced_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    return (str((obj.get("metadata") or {}).get("namespace") or ""), name_of(obj))


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def provider_id(node: Mapping[str, Any]) -> str:
    return str((node.get("spec") or {}).get("providerID") or "")


def allocatable(node: Mapping[str, Any]) -> dict[str, Fraction]:
    """``status.allocatable`` with every quantity parsed (``"1k"`` -> 1000)."""
    raw = (node.get("status") or {}).get("allocatable") or {}
    return {str(k): parse_quantity(v) for k, v in raw.items()}


def advertised(node: Mapping[str, Any]) -> Mapping[str, Any]:
    """The resources a node advertises, unparsed and not copied: its ``status.allocatable``, or,
    on a node object with no allocatable block at all (a pasted piece of ``describe`` or ``-o
    yaml``; the API server always sends one), its ``status.capacity``."""
    status = node.get("status")
    if not isinstance(status, Mapping):
        return {}
    found = status.get("allocatable") if "allocatable" in status else status.get("capacity")
    return found if isinstance(found, Mapping) else {}


def taints_of(node: Mapping[str, Any]) -> list[dict[str, str]]:
    return [dict(t) for t in (node.get("spec") or {}).get("taints") or []]


def is_cordoned(node: Mapping[str, Any]) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


def is_ready(node: Mapping[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def device_attributes(device: Mapping[str, Any]) -> dict[str, Any]:
    """A ResourceSlice device's attributes as ``name -> value``.

    Handles both layouts: ``devices[].attributes`` (resource.k8s.io v1/v1beta2) and
    ``devices[].basic.attributes`` (v1beta1). Each attribute holds one typed value
    (``string``, ``int``, ``bool`` or ``version``), which is unwrapped.
    """
    attrs = device.get("attributes")
    if attrs is None:
        attrs = (device.get("basic") or {}).get("attributes")
    out: dict[str, Any] = {}
    for key, typed in (attrs or {}).items():
        if isinstance(typed, Mapping):
            for kind in ("string", "int", "bool", "version"):
                if kind in typed:
                    out[str(key)] = typed[kind]
                    break
    return out


# --------------------------------------------------------------------------- quantities

_QUANTITY_RE = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE](?P<exp>[+-]?\d+))?$"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


#: Bounds that keep parsing cheap whatever the text: Kubernetes itself caps a quantity at
#: 2^63-1 in magnitude, so longer mantissas and larger exponents can only be mistakes.
MAX_QUANTITY_TEXT = 64
MAX_QUANTITY_EXPONENT = 40
_QUANTITY_CAP = 2**63 - 1


def parse_quantity(value: Any) -> Fraction:
    """Parse a Kubernetes resource quantity exactly (``8``, ``"8"``, ``"1k"``, ``"500m"``, ``"1Gi"``).

    Raises ``ValueError`` for anything else (booleans included) and for a quantity whose
    magnitude exceeds 2^63-1, the largest Kubernetes stores; the work done is bounded by
    ``MAX_QUANTITY_TEXT`` characters and a decimal exponent of ``MAX_QUANTITY_EXPONENT``.
    """
    from fractions import Fraction  # loaded when a quantity is first read, not by every render

    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return _in_range(Fraction(value), value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{value!r} is not a quantity")
        return _in_range(Fraction(repr(value)), value)
    if not isinstance(value, str):
        raise ValueError(f"{_shown(value)} is not a quantity")
    if type(value) is str and len(value) <= MAX_QUANTITY_TEXT:
        return _parse_text(value)
    return _parse_text_uncached(value)


@lru_cache(maxsize=4096)
def _parse_text(value: str) -> Fraction:
    """A quantity's text, parsed once per process: a cluster's nodes repeat a handful of values
    (``"8"``, ``"2Ti"``...), and the result is immutable, so every caller can share it."""
    return _parse_text_uncached(value)


def _parse_text_uncached(value: str) -> Fraction:
    from fractions import Fraction

    text = value.strip()
    if len(text) > MAX_QUANTITY_TEXT:
        raise ValueError(f"{_shown(value)} is not a quantity: longer than {MAX_QUANTITY_TEXT} characters")
    m = _QUANTITY_RE.match(text)
    if not m:
        raise ValueError(f"{value!r} is not a quantity")
    number = Fraction(m.group("num"))
    suffix = m.group("suffix") or ""
    if m.group("exp") is not None:
        exponent = int(m.group("exp"))
        if abs(exponent) > MAX_QUANTITY_EXPONENT:
            raise ValueError(f"{value!r} is out of range: the exponent may be at most {MAX_QUANTITY_EXPONENT} in magnitude")
        return _in_range(number * Fraction(10) ** exponent, value)
    if suffix in _BINARY:
        return _in_range(number * 1024 ** _BINARY[suffix], value)
    return _in_range(number * Fraction(10) ** _DECIMAL[suffix], value)


def _in_range(quantity: Fraction, value: Any) -> Fraction:
    if abs(quantity) > _QUANTITY_CAP:
        raise ValueError(f"{_shown(value)} is out of range: a quantity is at most 2^63-1")
    return quantity


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --------------------------------------------------------------------------- loading


#: A facts file is a cluster's objects as kubectl prints them: large, but not unbounded. YAML
#: this size still parses in seconds; for bigger clusters save JSON (``-o json``), which is
#: read by the JSON parser and may be four times larger.
FACTS_LIMITS = Limits(max_bytes=16 * 1024 * 1024, max_values=2_000_000, max_depth=100)
FACTS_JSON_LIMITS = Limits(max_bytes=64 * 1024 * 1024, max_values=4_000_000, max_depth=100)


def load_facts(path: str | Path) -> ClusterFacts:
    """Read a facts file (``-`` reads standard input); raise :class:`CompileError` when it is
    unreadable, too large or malformed."""
    source = str(path)
    try:
        text = read_text(path, FACTS_JSON_LIMITS.max_bytes or 0)
    except CompileError as exc:
        # the shared reader's refusals, under this input's own code
        raise CompileError([error("FactsUnreadable", source, f"cannot read cluster facts: {d.message}") for d in exc.errors]) from None
    return facts_from_text(text, source="<stdin>" if source == "-" else source)


def facts_from_text(text: str, *, source: str = "<facts>") -> ClusterFacts:
    """Parse YAML (or JSON) text holding one or more documents into facts, within the limits."""
    stripped = text.lstrip()
    as_json = stripped[:1] in ("{", "[")
    limits = FACTS_JSON_LIMITS if as_json else FACTS_LIMITS
    check_size(text, source, limits, code="FactsTooLarge")
    try:
        check_nesting(text, source)
    except CompileError as exc:  # the shared reader's refusal, under this input's own code
        raise CompileError([error("FactsMalformed", d.path, d.message) for d in exc.errors]) from None
    docs = _json_documents(text, source) if as_json else None
    if docs is None:
        docs = _yaml_documents(text, source)
    return facts_from_documents(docs, source=source, limits=limits)


def _json_documents(text: str, source: str) -> list[Any] | None:
    """The one JSON document ``text`` holds, or None when it is not JSON (then it is read as YAML)."""
    import json

    try:
        return [json.loads(text)]
    except RecursionError:
        raise CompileError([error("FactsMalformed", source, "mappings and lists nest too deep to read")]) from None
    except ValueError as exc:
        if "digits" in str(exc) and len(text) > (FACTS_LIMITS.max_bytes or 0):
            # Python refuses integers of thousands of digits; the YAML reader, which would name
            # the field, is too slow for a text this large.
            raise CompileError(
                [error("FactsMalformed", source, "an integer is out of range: numbers in Kubernetes objects are 64-bit")]
            ) from None
        return None  # not JSON after all, or an integer the YAML reader reports at its path


def _facts_loader() -> Any:
    """The project's safe YAML loader, except that an unquoted timestamp stays the text it is.

    ``kubectl get -o yaml`` before about 2018 printed ``creationTimestamp: 2017-11-02T14:00:08Z``
    without quotes; in the API those fields are strings, so they are read as strings here.
    """
    yaml = make_loader(version=None)
    base: Any = yaml.Constructor

    class _TimestampsAsText(base):  # type: ignore[misc]
        def construct_timestamp_text(self, node: Any) -> str:
            return str(self.construct_scalar(node))

    _TimestampsAsText.add_constructor("tag:yaml.org,2002:timestamp", _TimestampsAsText.construct_timestamp_text)
    yaml.Constructor = _TimestampsAsText
    return yaml


def _yaml_documents(text: str, source: str) -> list[Any]:
    from ruamel.yaml.error import YAMLError

    try:
        return list(_facts_loader().load_all(text))
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CompileError([error("FactsYAMLError", source, f"not valid YAML{where}: {problem}")]) from None
    except RecursionError:
        raise CompileError([error("FactsMalformed", source, "mappings and lists nest too deep to read")]) from None
    except ValueError as exc:
        raise CompileError([error("FactsYAMLError", source, f"not valid YAML: {str(exc)[:200]}")]) from None


def facts_from_documents(docs: Iterable[Any], *, source: str = "<facts>", limits: Limits | None = None) -> ClusterFacts:
    """Validate parsed documents and collect the Nodes, ResourceSlices and Pods in them.

    ``None`` documents (empty ``---`` sections) are skipped. The documents must first be plain
    data within ``limits`` (``FACTS_LIMITS`` by default): no more values than it allows once
    aliases are followed, no deeper nesting, only JSON values. Raises :class:`CompileError`
    with every problem found.
    """
    documents = list(docs)
    _check_plain(documents, source, limits or FACTS_LIMITS)
    loader = _Loader(source)
    for index, doc in enumerate(documents):
        prefix: list[str | int] = ["documents", index] if len(documents) > 1 else []
        if doc is None:
            continue
        loader.document(doc, prefix)
    return loader.finish()


def facts_from_objects(
    *,
    nodes: Iterable[Mapping[str, Any]] = (),
    resource_slices: Iterable[Mapping[str, Any]] = (),
    pods: Iterable[Mapping[str, Any]] = (),
    source: str = "cluster",
) -> ClusterFacts:
    """Facts from objects already sorted by kind, as an informer cache holds them: an object
    without ``kind`` takes the kind of its argument (items of a typed list carry none)."""
    docs: list[Any] = []
    for kind, objects in (("Node", nodes), ("ResourceSlice", resource_slices), ("Pod", pods)):
        docs.extend(obj if isinstance(obj, Mapping) and obj.get("kind") else {**obj, "kind": kind} for obj in objects)
    return facts_from_documents([{"kind": "List", "items": docs}], source=source)


def _check_plain(docs: list[Any], source: str, limits: Limits) -> None:
    problems = []
    for index, doc in enumerate(docs):
        prefix: list[str | int] = ["documents", index] if len(docs) > 1 else []
        for code, parts, message in plain_data_problems(doc, limits):
            where = format_path([*prefix, *parts])
            code = "FactsTooLarge" if code == "YAMLTooLarge" else "FactsMalformed"
            problems.append(error(code, f"{source}: {where}" if where else source, message))
    if problems:
        raise CompileError(problems)


class _Loader:
    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[Diagnostic] = []
        self.collected: dict[str, list[tuple[dict[str, Any], str]]] = {"nodes": [], "resource_slices": [], "pods": []}
        self.ignored: Counter[str] = Counter()
        self.first_ignored: dict[str, str] = {}

    # -- helpers
    def _path(self, parts: Sequence[str | int]) -> str:
        where = format_path(parts)
        return f"{self.source}: {where}" if where else self.source

    def _err(self, parts: Sequence[str | int], message: str) -> None:
        self.errors.append(error("FactsMalformed", self._path(parts), message))

    # -- structure
    def document(self, doc: Any, prefix: list[str | int]) -> None:
        if not isinstance(doc, dict):
            self._err(prefix, f"expected a Kubernetes object (a mapping), found {_type_name(doc)}")
            return
        kind = doc.get("kind")
        if not isinstance(kind, str) or not kind:
            self._err([*prefix, "kind"], "every object needs a kind (Node, ResourceSlice, Pod or a List of them)")
            return
        if kind.endswith("List") and "items" in doc:
            self.list_document(doc, kind, prefix)
        else:
            self.object(doc, prefix)

    def list_document(self, doc: dict[str, Any], kind: str, prefix: list[str | int]) -> None:
        items = doc.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            self._err([*prefix, "items"], f"expected a list of objects, found {_type_name(items)}")
            return
        item_kind = kind[: -len("List")]
        for i, item in enumerate(items):
            where = [*prefix, "items", i]
            if not isinstance(item, dict):
                self._err(where, f"expected a Kubernetes object (a mapping), found {_type_name(item)}")
                continue
            if "kind" not in item and item_kind:
                # Typed lists (NodeList, PodList...) from the API omit kind on their items.
                item = {**item, "kind": item_kind}
                if "apiVersion" not in item and isinstance(doc.get("apiVersion"), str):
                    item["apiVersion"] = doc["apiVersion"]
            if not isinstance(item.get("kind"), str) or not item.get("kind"):
                self._err([*where, "kind"], "every object needs a kind (Node, ResourceSlice or Pod)")
                continue
            self.object(item, where)

    def object(self, obj: dict[str, Any], where: list[str | int]) -> None:
        kind = obj["kind"]
        api_version = obj.get("apiVersion")
        if api_version is not None and not isinstance(api_version, str):
            self._err([*where, "apiVersion"], f"expected a string, found {_type_name(api_version)}")
            return
        group = (api_version or "").rpartition("/")[0] if api_version and "/" in api_version else ""
        if kind in _CORE_KINDS and group == "":
            bucket = _CORE_KINDS[kind]
        elif kind == "ResourceSlice" and (api_version is None or group == _RESOURCE_GROUP):
            bucket = "resource_slices"
        else:
            label = f"{kind} ({api_version})" if api_version else kind
            self.ignored[label] += 1
            self.first_ignored.setdefault(label, self._path(where))
            return
        before = len(self.errors)
        self._metadata(obj, where, namespaced=(bucket == "pods"))
        getattr(self, f"_check_{bucket}")(obj, where)
        if len(self.errors) == before:
            self.collected[bucket].append((obj, self._path(where)))

    # -- per-kind validation
    def _metadata(self, obj: dict[str, Any], where: list[str | int], *, namespaced: bool) -> None:
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            self._err([*where, "metadata"], f"expected a mapping with a name, found {_type_name(meta)}")
            return
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            self._err([*where, "metadata", "name"], f"{obj['kind']} needs a non-empty string name")
        if namespaced and meta.get("namespace") is not None and not isinstance(meta.get("namespace"), str):
            self._err([*where, "metadata", "namespace"], "expected a string")
        for key in ("labels", "annotations"):
            self._string_map(meta.get(key), [*where, "metadata", key], what=key[:-1] + " value")

    def _string_map(self, value: Any, parts: list[str | int], *, what: str) -> None:
        if value is None:
            return
        if not isinstance(value, dict):
            self._err(parts, f"expected a mapping, found {_type_name(value)}")
            return
        for key, item in value.items():
            if not isinstance(key, str):
                self._err(parts, f"keys must be strings, found {key!r}")
            elif not isinstance(item, str):
                shown = "true" if item is True else "false" if item is False else str(item)
                self._err([*parts, key], f'{what}s must be strings: quote it, e.g. "{shown}"')

    def _mapping(self, obj: dict[str, Any], key: str, parts: list[str | int]) -> dict[str, Any]:
        value = obj.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self._err([*parts, key], f"expected a mapping, found {_type_name(value)}")
            return {}
        return value

    def _list(self, obj: dict[str, Any], key: str, parts: list[str | int]) -> list[Any]:
        value = obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self._err([*parts, key], f"expected a list, found {_type_name(value)}")
            return []
        return value

    def _string_field(self, obj: dict[str, Any], key: str, parts: list[str | int], *, required: bool = False) -> None:
        value = obj.get(key)
        if value is None:
            if required:
                self._err([*parts, key], "required")
            return
        if not isinstance(value, str) or (required and not value):
            self._err([*parts, key], f"expected a{' non-empty' if required else ''} string, found {_type_name(value)}")

    def _check_nodes(self, node: dict[str, Any], where: list[str | int]) -> None:
        spec = self._mapping(node, "spec", where)
        self._string_field(spec, "providerID", [*where, "spec"])
        if spec.get("unschedulable") is not None and not isinstance(spec["unschedulable"], bool):
            self._err([*where, "spec", "unschedulable"], f"expected true or false, found {_type_name(spec['unschedulable'])}")
        for i, taint in enumerate(self._list(spec, "taints", [*where, "spec"])):
            tpath = [*where, "spec", "taints", i]
            if not isinstance(taint, dict):
                self._err(tpath, f"expected a mapping with key and effect, found {_type_name(taint)}")
                continue
            self._string_field(taint, "key", tpath, required=True)
            self._string_field(taint, "value", tpath)
            self._string_field(taint, "effect", tpath)
        status = self._mapping(node, "status", where)
        for key in ("allocatable", "capacity"):
            resources = self._mapping(status, key, [*where, "status"])
            for rname, qty in resources.items():
                try:
                    parse_quantity(qty)
                except ValueError as exc:
                    reason = str(exc) if "out of range" in str(exc) else f"{_shown(qty)} is not a Kubernetes quantity"
                    self._err([*where, "status", key, str(rname)], reason)
        for i, cond in enumerate(self._list(status, "conditions", [*where, "status"])):
            if not isinstance(cond, dict):
                self._err([*where, "status", "conditions", i], f"expected a mapping, found {_type_name(cond)}")

    def _check_resource_slices(self, rs: dict[str, Any], where: list[str | int]) -> None:
        spec = self._mapping(rs, "spec", where)
        spath = [*where, "spec"]
        self._string_field(spec, "driver", spath)
        self._string_field(spec, "nodeName", spath)
        pool = self._mapping(spec, "pool", spath)
        self._string_field(pool, "name", [*spath, "pool"])
        gen = pool.get("generation")
        if gen is not None and (isinstance(gen, bool) or not isinstance(gen, int)):
            self._err([*spath, "pool", "generation"], f"expected an integer, found {_type_name(gen)}")
        for i, dev in enumerate(self._list(spec, "devices", spath)):
            dpath = [*spath, "devices", i]
            if not isinstance(dev, dict):
                self._err(dpath, f"expected a mapping, found {_type_name(dev)}")
                continue
            self._string_field(dev, "name", dpath)
            holder, hpath = dev, dpath
            if "attributes" not in dev and isinstance(dev.get("basic"), dict):
                holder, hpath = dev["basic"], [*dpath, "basic"]
            for aname, typed in self._mapping(holder, "attributes", hpath).items():
                if not isinstance(typed, dict) or len(typed) != 1:
                    self._err([*hpath, "attributes", str(aname)], "expected one of string, int, bool or version")

    def _check_pods(self, pod: dict[str, Any], where: list[str | int]) -> None:
        spec = self._mapping(pod, "spec", where)
        self._string_field(spec, "nodeName", [*where, "spec"])
        for key in ("initContainers", "containers"):
            for i, ctr in enumerate(self._list(spec, key, [*where, "spec"])):
                cpath = [*where, "spec", key, i]
                if not isinstance(ctr, dict):
                    self._err(cpath, f"expected a mapping, found {_type_name(ctr)}")
                    continue
                self._string_field(ctr, "image", cpath)
        status = self._mapping(pod, "status", where)
        self._string_field(status, "phase", [*where, "status"])

    # -- result
    def finish(self) -> ClusterFacts:
        for bucket, entries in self.collected.items():
            seen: dict[tuple[str, str], str] = {}
            for obj, path in entries:
                key = _namespaced_key(obj) if bucket == "pods" else ("", name_of(obj))
                if key in seen:
                    shown = "/".join(p for p in key if p)
                    self.errors.append(error("FactsDuplicateObject", path, f"{obj['kind']} {shown} appears twice (first at {seen[key]})"))
                else:
                    seen[key] = path
        if self.errors:
            raise CompileError(self.errors)
        notes = [
            info(
                "FactsKindIgnored",
                self.first_ignored[label],
                f"{count} {label} object(s) ignored: detection reads only Nodes, ResourceSlices and Pods",
            )
            for label, count in sorted(self.ignored.items())
        ]
        return ClusterFacts(
            nodes=tuple(obj for obj, _ in self.collected["nodes"]),
            resource_slices=tuple(obj for obj, _ in self.collected["resource_slices"]),
            pods=tuple(obj for obj, _ in self.collected["pods"]),
            source=self.source,
            diagnostics=tuple(notes),
        )


def _type_name(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
