"""Platform x GPU-architecture overlays: data files that patch an instantiated Workflow.

An overlay is ``platforms/<platform>/<name>.yaml``::

    name: aws-efa-h100            # unique across all overlays
    reason: one line saying why   # printed in provenance and the platform table
    order: 100                    # overlays apply in (order, name) order
    when:                         # every clause given must match
      platform: {in: [aws]}       # {equals: x} | {in: [...]} | {notIn: [...]}
      gpuArchitecture: {in: [h100]}
      entry: {in: [communication/nccl-all-reduce]}
      launch: {in: [mpi]}
      expression: 'options.rdmaDeviceAccess == "hostPath"'   # CEL, optional
    patches: aws/efa-h100.patches.yaml.j2                   # YAML template, rendered on match

An overlay without a ``gpuArchitecture`` clause must say ``allArchitectures: true``, so that no
overlay reaches an architecture by accident. The rendered patch template is a list of operations,
each a mapping with one key (see ``apply_operation``). Operations never guess: a patch aimed at
something the Workflow does not have is an error naming the overlay. A ``when.expression`` that
is a simple field test is decided in Python (``cel_native``, the same answers); cel-python is
loaded only for the others, and for every condition that might be an error. Each file becomes an
immutable :class:`~nvcre.compiler.overlay_model.Overlay` (see :func:`parse_overlay` for how it is
checked).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from . import mpi_args
from .cel_native import decide
from .datacopy import is_plain, plain_copy
from .diagnostics import CompileError, Diagnostic, error
from .merge import merge
from .overlay_model import Overlay, StringMatch, When
from .yamlio import load_file

__all__ = [
    "OPERATIONS",
    "Overlay",
    "OverlayConditionError",
    "OverlaySet",
    "PatchError",
    "StringMatch",
    "When",
    "apply_operation",
    "load_overlays",
    "parse_overlay",
    "platforms_root",
]


class MatchFacts(NamedTuple):
    platform: str
    gpu_arch: str
    entry: str
    launch: str
    source_kind: str
    options: Mapping[str, Any]


class OverlayConditionError(Exception):
    """An overlay's ``when`` expression that cannot be evaluated for a render; names the overlay."""

    def __init__(self, overlay: Overlay, message: str) -> None:
        super().__init__(message)
        self.overlay = overlay
        self.message = message


#: condition key -> the condition's value. Conditions are pure functions of the facts they read,
#: and the same few facts come back for every category and render. Starts over when full.
_CONDITIONS: dict[tuple[Any, ...], bool] = {}
_CONDITIONS_LIMIT = 8192
_VARIABLES = ("platform", "gpuArchitecture", "entry", "launch", "sourceKind", "options")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: ``options`` and, when it is a field selection (not a method or macro call), the field
_OPTIONS_USE = re.compile(r"\boptions\b(?:\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_]|\s*\())?")


@cache
def _condition_inputs(expression: str) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """The variables an expression can read, and the option fields it can read (None: any).

    Only fields selected as ``options.<name>`` are narrowed to; any other use of ``options``
    (indexing, a method or macro such as ``options.exists(...)``, passing it whole) makes every
    field an input. Words inside string
    literals only ever add inputs, never hide one.
    """
    names = set(_IDENTIFIER.findall(expression))
    variables = tuple(name for name in _VARIABLES if name in names)
    fields: set[str] = set()
    for use in _OPTIONS_USE.finditer(expression):
        if use.group(1) is None:
            return variables, None
        fields.add(use.group(1))
    return variables, tuple(sorted(fields))


def _cel_ready(value: Any) -> bool:
    """Plain data CEL can take whole (64-bit integers): evaluating could not fail on converting it."""
    if type(value) is int:
        return -(2**63) <= value < 2**63
    if type(value) is dict:
        return all(_cel_ready(item) for item in value.values())
    if type(value) is list or type(value) is tuple:
        return all(_cel_ready(item) for item in value)
    return True


def _cel_takes_whole(activation: Mapping[str, Any]) -> bool:
    return is_plain(activation) and _cel_ready(activation)


def _condition_key(expression: str, activation: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """A memo key holding exactly what the expression can read, or None when the activation is
    not plain data CEL takes whole (then every evaluation converts it, and may fail, as before)."""
    if not is_plain(activation) or not _cel_ready(activation):
        return None
    variables, fields = _condition_inputs(expression)
    read: list[Any] = []
    for name in variables:
        value = activation[name]
        if name == "options" and fields is not None:
            value = {field: value[field] for field in fields if field in value}
        read.append((name, repr(value)))
    return (expression, *read)


class _Activation:
    """The variables a condition sees for one set of facts, and whether CEL takes them whole,
    decided on first need and then kept: every overlay condition of a unit asks the same."""

    __slots__ = ("values", "_whole")

    def __init__(self, facts: MatchFacts) -> None:
        self.values = {
            "platform": facts.platform,
            "gpuArchitecture": facts.gpu_arch,
            "entry": facts.entry,
            "launch": facts.launch,
            "sourceKind": facts.source_kind,
            "options": dict(facts.options),
        }
        self._whole: bool | None = None

    def whole(self, values: Mapping[str, Any]) -> bool:
        if values is not self.values:  # asked about other values: decide them afresh
            return _cel_takes_whole(values)
        if self._whole is None:
            self._whole = _cel_takes_whole(values)
        return self._whole


def _cel_matches(expression: str, facts: MatchFacts, prepared: _Activation | None = None) -> bool:
    """``expression`` over ``facts``; ``prepared`` is their activation when the caller has one."""
    prepared = prepared or _Activation(facts)
    activation = prepared.values
    decided = decide(expression, activation, prepared.whole)
    if decided is not None:  # a field test settled in Python: cel-python is not even loaded
        return decided
    key = _condition_key(expression, activation)
    if key is not None and key in _CONDITIONS:
        return _CONDITIONS[key]
    from .cel import evaluate_bool

    result = evaluate_bool(expression, activation)  # an error is raised every time, never memoised
    if key is not None:
        if len(_CONDITIONS) >= _CONDITIONS_LIMIT:
            _CONDITIONS.clear()
        _CONDITIONS[key] = result
    return result


def _fixed_clauses_hold(overlay: Overlay, facts: MatchFacts) -> bool:
    """The overlay's clauses on platform, architecture, entry, launch and source kind all hold."""
    when = overlay.when
    checks = (
        (when.platform, facts.platform),
        (when.gpu_architecture, facts.gpu_arch),
        (when.entry, facts.entry),
        (when.launch, facts.launch),
        (when.source_kind, facts.source_kind),
    )
    return not any(clause is not None and not clause.matches(value) for clause, value in checks)


def matches(overlay: Overlay, facts: MatchFacts) -> bool:
    if not _fixed_clauses_hold(overlay, facts):
        return False
    return _expression_holds(overlay, facts)


def _expression_holds(overlay: Overlay, facts: MatchFacts, prepared: _Activation | None = None) -> bool:
    """The overlay's ``when.expression`` holds (true when it has none); OverlayConditionError when it cannot be evaluated."""
    when = overlay.when
    if when.expression is None:
        return True
    try:
        return _cel_matches(when.expression, facts, prepared)
    except Exception as exc:  # noqa: BLE001 - CEL raises its own hierarchy as well as ValueError/TypeError
        # cel-python raises CELEvalError (and, for some operand mixes, TypeError) straight out of
        # evaluate(); whatever it is, the render must get a diagnostic naming the overlay.
        detail = str(exc) or type(exc).__name__
        raise OverlayConditionError(overlay, f"when.expression {when.expression!r} cannot be evaluated: {detail}") from None


class OverlaySet(NamedTuple):
    root: Path
    overlays: tuple[Overlay, ...]

    def matching(self, facts: MatchFacts) -> list[Overlay]:
        """The overlays whose ``when`` holds, in order (as :func:`matches` decides each one)."""
        candidates = _candidates(self.overlays, facts)
        if not any(overlay.when.expression is not None for overlay in candidates):
            return candidates
        prepared = _Activation(facts)  # one activation for every condition of these facts
        return [overlay for overlay in candidates if _expression_holds(overlay, facts, prepared)]

    def platforms(self) -> list[str]:
        names: set[str] = set()
        for overlay in self.overlays:
            clause = overlay.when.platform
            if clause is not None:
                names.update(clause.in_ or ())
                if clause.equals:
                    names.add(clause.equals)
        return sorted(names)


#: (id of an overlay tuple, platform, architecture, source kind) -> (that tuple, the overlays whose
#: clauses on those three hold, in order); the tuple is kept so its id stays its own
_CANDIDATES: dict[tuple[int, str, str, str], tuple[tuple[Overlay, ...], tuple[Overlay, ...]]] = {}
_CANDIDATES_LIMIT = 4096


def _holds(clause: StringMatch | None, value: str) -> bool:
    return clause is None or clause.matches(value)


def _candidates(overlays: tuple[Overlay, ...], facts: MatchFacts) -> list[Overlay]:
    """The overlays whose clauses other than the expression hold for ``facts``, in order.

    The platform, architecture and source-kind clauses are decided once per overlay set and
    those three strings (a render of one pair asks the same for every category) and the entry
    and launch clauses on the few overlays left, so the answer is :func:`_fixed_clauses_hold`'s.
    """
    if type(overlays) is not tuple:  # a list could change under the memo: decide afresh
        return [overlay for overlay in overlays if _fixed_clauses_hold(overlay, facts)]
    key = (id(overlays), facts.platform, facts.gpu_arch, facts.source_kind)
    known = _CANDIDATES.get(key)
    if known is None or known[0] is not overlays:
        found = tuple(
            overlay
            for overlay in overlays
            if _holds(overlay.when.platform, facts.platform)
            and _holds(overlay.when.gpu_architecture, facts.gpu_arch)
            and _holds(overlay.when.source_kind, facts.source_kind)
        )
        if len(_CANDIDATES) >= _CANDIDATES_LIMIT:
            _CANDIDATES.clear()
        known = _CANDIDATES[key] = (overlays, found)
    return [o for o in known[1] if _holds(o.when.entry, facts.entry) and _holds(o.when.launch, facts.launch)]


def platforms_root() -> Path:
    import nvcre.platforms

    return Path(nvcre.platforms.__file__).parent


def parse_overlay(data: Any, source: str = "", prefix: str = "") -> Overlay:
    """The overlay ``data`` describes, found at ``source``; CompileError (``OverlayInvalid`` at
    ``prefix`` + field path) otherwise. A plainly valid mapping is read directly; anything else
    goes through the models, which decide it and word every problem."""
    from .source_check import overlay

    found = overlay(data, source)
    if found is not None:
        return found
    from .source_models import checked_overlay

    return checked_overlay({**data, "source": source} if isinstance(data, Mapping) else data, prefix)


@cache
def load_overlays(root: str | None = None) -> OverlaySet:
    base = Path(root) if root else platforms_root()
    overlays: list[Overlay] = []
    problems: list[Diagnostic] = []
    for path in sorted(base.glob("*/*.yaml")):
        if path.parent.name.startswith("_") or path.parent.name == "detection":
            continue
        rel = str(path.relative_to(base))
        data = load_file(path)[0]
        try:
            overlay = parse_overlay(data, rel, f"{rel}: ")
        except CompileError as exc:
            problems.extend(exc.diagnostics)
            continue
        if not (base / overlay.patches).is_file():
            problems.append(error("OverlayInvalid", f"{rel}: patches", f"template {overlay.patches} does not exist"))
        overlays.append(overlay)
    seen: dict[str, str] = {}
    for overlay in overlays:
        if overlay.name in seen:
            problems.append(error("OverlayInvalid", overlay.source, f"name {overlay.name} is also used by {seen[overlay.name]}"))
        seen[overlay.name] = overlay.source
    if problems:
        raise CompileError(problems)
    overlays.sort(key=lambda o: (o.order, o.name))
    return OverlaySet(root=base, overlays=tuple(overlays))


# --- operations -----------------------------------------------------------------------------------

TRAINER_PATH = ("spec", "jobTemplate", "spec", "workload", "trainJob", "trainer")
JOB_SPEC_PATH = ("spec", "jobTemplate", "spec")
TRAINJOB_PATH = ("spec", "jobTemplate", "spec", "workload", "trainJob")
ORCHESTRATION_PATH = ("spec", "orchestration")

OPERATIONS = (
    "trainer",
    "trainJob",
    "jobSpec",
    "orchestration",
    "runtime",
    "pod",
    "container",
    "dependencies",
    "mpiEnv",
    "replaceArgs",
    "jsonPatch",
)


class PatchError(Exception):
    """An operation that cannot apply; the overlay engine turns it into a diagnostic."""


def _merge_at(workflow: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    node = workflow
    for key in path[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise PatchError(f"{'.'.join(path)} crosses a non-mapping value")
    node[path[-1]] = merge(node.get(path[-1], {}), value)
    return workflow


def _runtime(workflow: dict[str, Any]) -> dict[str, Any]:
    ref = (_get(workflow, TRAINJOB_PATH) or {}).get("runtimeRef") or {}
    for dep in workflow.get("spec", {}).get("dependencies", []) or []:
        if dep.get("kind") == "TrainingRuntime" and dep.get("metadata", {}).get("name") == ref.get("name"):
            found: dict[str, Any] = dep
            return found
    raise PatchError(f"the Workflow has no TrainingRuntime dependency named {ref.get('name')!r}")


def _get(doc: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def _replicated_jobs(runtime: dict[str, Any], names: list[str]) -> list[dict[str, Any]]:
    jobs = _get(runtime, ("spec", "template", "spec", "replicatedJobs")) or []
    by_name = {job.get("name"): job for job in jobs}
    missing = [name for name in names if name not in by_name]
    if missing:
        raise PatchError(f"runtime {runtime['metadata']['name']} has no replicated job {', '.join(missing)}")
    return [by_name[name] for name in names]


def _pod_template(job: dict[str, Any]) -> dict[str, Any]:
    template: dict[str, Any] = job.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
    return template


def _op_pod(workflow: dict[str, Any], value: Mapping[str, Any]) -> dict[str, Any]:
    runtime = _runtime(workflow)
    for job in _replicated_jobs(runtime, list(value.get("jobs") or ["node"])):
        pod = _pod_template(job)
        for key in ("metadata", "spec"):
            if key in value:
                pod[key] = merge(pod.get(key, {}), value[key])
        if "jobMetadata" in value:
            job["template"]["metadata"] = merge(job["template"].get("metadata", {}), value["jobMetadata"])
    return workflow


def _op_container(workflow: dict[str, Any], value: Mapping[str, Any]) -> dict[str, Any]:
    runtime = _runtime(workflow)
    name = value.get("name", "node")
    init = bool(value.get("init", False))
    field = "initContainers" if init else "containers"
    for job in _replicated_jobs(runtime, list(value.get("jobs") or ["node"])):
        spec = _pod_template(job).setdefault("spec", {})
        containers = spec.get(field) or []
        patch = {k: v for k, v in value.items() if k not in ("jobs", "init")}
        patch["name"] = name
        if not any(c.get("name") == name for c in containers) and not value.get("create", False):
            raise PatchError(f"replicated job {job.get('name')} has no {'init ' if init else ''}container {name!r}")
        patch.pop("create", None)
        spec[field] = merge(containers, [patch]) if containers else [patch]
    return workflow


def _op_dependencies(workflow: dict[str, Any], value: list[Any]) -> dict[str, Any]:
    spec = workflow.setdefault("spec", {})
    current = spec.get("dependencies") or []
    spec["dependencies"] = merge(current, value) if current else plain_copy(value)
    return workflow


def _op_mpi_env(workflow: dict[str, Any], value: list[Any], owners: dict[str, str], overlay: str) -> dict[str, Any]:
    trainer = _get(workflow, TRAINER_PATH)
    if trainer is None or "args" not in trainer:
        raise PatchError("mpiEnv needs trainer args to forward variables in")
    args = list(trainer["args"])
    for item in value:
        name = item["name"]
        if name in owners and owners[name] != overlay:
            raise PatchError(f"{name} is already forwarded by overlay {owners[name]}; one overlay owns each variable")
        try:
            args = mpi_args.set_forwarded(args, name, item.get("value"))
        except ValueError as exc:
            raise PatchError(f"mpiEnv: {exc}") from None
        owners[name] = overlay
    trainer["args"] = args
    return workflow


def _op_replace_args(workflow: dict[str, Any], value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not value:
        raise PatchError("replaceArgs takes a non-empty mapping of old argument to new argument")
    bad = [repr(k) for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        raise PatchError(f"replaceArgs: old and new arguments must be strings ({', '.join(bad)})")
    trainer = _get(workflow, TRAINER_PATH)
    if not isinstance(trainer, dict) or not isinstance(trainer.get("args"), list):
        raise PatchError("replaceArgs needs trainer args to replace in")
    args = list(trainer["args"])
    for old, new in value.items():
        if old not in args:
            raise PatchError(f"replaceArgs: trainer args hold no {old!r}")
        args = [new if arg == old else arg for arg in args]
    trainer["args"] = args
    return workflow


_MAPPING_OPS = frozenset({"trainer", "trainJob", "jobSpec", "orchestration", "runtime", "pod", "container", "replaceArgs"})
_LIST_OPS = frozenset({"dependencies", "mpiEnv", "jsonPatch"})


def apply_operation(workflow: dict[str, Any], operation: Mapping[str, Any], owners: dict[str, str], overlay: str) -> dict[str, Any]:
    """Apply one rendered operation to ``workflow`` (already a private copy) and return it.

    Every failure, including a value of the wrong shape deep inside an operation, comes out as a
    ``PatchError`` naming the operation, never as a bare ``TypeError`` or ``KeyError``.
    """
    if not isinstance(operation, dict) or len(operation) != 1:
        raise PatchError(f"each patch is a mapping with one of: {', '.join(OPERATIONS)}")
    ((op, value),) = operation.items()
    if op in _MAPPING_OPS and not isinstance(value, Mapping):
        raise PatchError(f"{op} takes a mapping, not {type(value).__name__}")
    if op in _LIST_OPS and not isinstance(value, list):
        raise PatchError(f"{op} takes a list, not {type(value).__name__}")
    if op == "mpiEnv" and not all(isinstance(item, Mapping) and isinstance(item.get("name"), str) for item in value):
        raise PatchError("mpiEnv takes a list of {name, value} mappings")
    try:
        return _dispatch(workflow, op, value, owners, overlay)
    except PatchError:
        raise
    except (TypeError, AttributeError, KeyError, ValueError, IndexError) as exc:
        raise PatchError(f"{op}: the patch does not fit the Workflow ({type(exc).__name__}: {exc})") from None


def _dispatch(workflow: dict[str, Any], op: str, value: Any, owners: dict[str, str], overlay: str) -> dict[str, Any]:
    if op == "trainer":
        return _merge_at(workflow, TRAINER_PATH, value)
    if op == "trainJob":
        return _merge_at(workflow, TRAINJOB_PATH, value)
    if op == "jobSpec":
        return _merge_at(workflow, JOB_SPEC_PATH, value)
    if op == "orchestration":
        return _merge_at(workflow, ORCHESTRATION_PATH, value)
    if op == "runtime":
        runtime = _runtime(workflow)
        runtime.update(merge(runtime, value))
        return workflow
    if op == "pod":
        return _op_pod(workflow, value)
    if op == "container":
        return _op_container(workflow, value)
    if op == "dependencies":
        return _op_dependencies(workflow, value)
    if op == "mpiEnv":
        return _op_mpi_env(workflow, value, owners, overlay)
    if op == "replaceArgs":
        return _op_replace_args(workflow, value)
    if op == "jsonPatch":
        import jsonpatch

        try:
            patched: dict[str, Any] = jsonpatch.apply_patch(workflow, value)
            return patched
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise PatchError(f"jsonPatch: {exc}") from None
    raise PatchError(f"unknown patch operation {op!r}; expected one of: {', '.join(OPERATIONS)}")
