"""Golden output of ``nvcrectl certification run --wait``: the stderr pipeline and the stdout report.

Each case under ``golden/cli/<case>/`` names, in ``case.yaml``, the command line, the exit code it
must end with, and a case of ``golden/report/`` whose objects a scripted API server plays back:
the Certification or WorkloadRun the CLI creates is InProgress for a few polls, then takes the golden status,
and the Workflows, Jobs, measurements and ConfigMaps are there as the controller left them. The
CLI runs in-process with a fake clock; its stderr and stdout go through :func:`normalise` (see
``golden/cli/README.md``) and are compared with ``stderr.txt`` and ``stdout.txt``.

The live progress view is tested here too: plain ``[watch]`` lines when stderr is not a
terminal, the rich table through a rich Console forced to act as a terminal.
"""

from __future__ import annotations

import copy
import io
import itertools
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.runtime.kube.client import ObjectList
from nvcre.runtime.kube.errors import AlreadyExists, NotFound
from nvcre.runtime.kube.resources import Resource
from tests.goldenharness import GOLDEN, REPO, cases, check

CASES = cases("cli")
IN_PROGRESS_POLLS = 9  # enough polls (2 s apart on the fake clock) for one 15 s heartbeat

_TIMESTAMPED = re.compile(r"nvcrectl-\d{8}-\d{6}")
_ELAPSED = re.compile(r"\((?:\d+h)?(?:\d+m)?\d+s")
_RAN_FOR = re.compile(r"ran for (?:\d+h)?(?:\d+m)?\d+s")


def normalise(text: str, results: Path | None = None) -> str:
    """The documented filter: generated names, elapsed times and the results path become markers."""
    if results is not None:
        text = text.replace(str(results), "<RESULTS>")
    text = text.replace(str(REPO), "<REPO>")
    text = _TIMESTAMPED.sub("nvcrectl-<TIMESTAMP>", text)
    text = _RAN_FOR.sub("ran for <ELAPSED>", text)
    return "\n".join(_ELAPSED.sub("(<ELAPSED>", line) if line.startswith("[watch]") else line for line in text.split("\n"))


class FakeTime:
    """``monotonic`` and ``sleep`` for the wait loop: sleeping only moves the clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _key(resource: Resource, name: str, namespace: str | None) -> tuple[str, str, str]:
    return (resource.plural, namespace if resource.namespaced else "", name)


class ScriptedCluster:
    """An API server holding objects in memory that plays a golden report case back to the CLI."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self._golden = objects
        self._store: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._uids = (f"00000000-0000-4000-8000-{n:012d}" for n in itertools.count(1))
        self.run_gets = 0
        self.calls: list[str] = []

    # -------------------------------------------------------------- the script

    def _golden_run(self) -> dict[str, Any]:
        return next(o for o in self._golden if o["kind"] in ("Certification", "WorkloadRun"))

    def _submitted(self, run: dict[str, Any]) -> None:
        """The controller's work, all at once: every golden object, moved into the run's namespace."""
        namespace = run["metadata"]["namespace"]
        old = self._golden_run()["metadata"]["namespace"]
        run["metadata"]["uid"] = self._golden_run()["metadata"].get("uid") or run["metadata"]["uid"]
        for obj in self._golden:
            if obj["kind"] in ("Certification", "WorkloadRun"):
                continue
            moved = json.loads(json.dumps(obj).replace(f'"{old}"', f'"{namespace}"'))
            if moved["kind"] == "Workflow":  # the controller owns every Workflow it creates by its run
                moved["metadata"].setdefault(
                    "ownerReferences",
                    [
                        {
                            "apiVersion": run["apiVersion"],
                            "kind": run["kind"],
                            "name": run["metadata"]["name"],
                            "uid": run["metadata"]["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                )
            self._store[_key(_plural_of(moved), moved["metadata"]["name"], namespace)] = moved

    def _run_view(self, live: dict[str, Any]) -> dict[str, Any]:
        self.run_gets += 1
        golden = copy.deepcopy(self._golden_run())
        old = golden["metadata"]["namespace"]
        status = json.loads(json.dumps(golden.get("status") or {}).replace(f'"{old}"', f'"{live["metadata"]["namespace"]}"'))
        view = copy.deepcopy(live)
        if self.run_gets <= IN_PROGRESS_POLLS:
            for entry in status.get("categoryStatuses") or []:
                entry["status"] = "InProgress"
            status["conditions"] = [{"type": "InProgress", "status": "True", "reason": "WorkflowsRunning", "message": ""}]
            status.pop("phase", None)
        view["status"] = status
        return view

    def _terminal(self) -> bool:
        return self.run_gets > IN_PROGRESS_POLLS

    # -------------------------------------------------------------- Kube

    def resource_for(self, api_version: str, kind: str) -> Resource:
        group, _, version = api_version.rpartition("/")
        return Resource(group, version, kind.lower() + "s", kind, namespaced=kind not in ("Namespace", "Node"))

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(f"get {resource.kind} {name}")
        found = self._store.get(_key(resource, name, namespace))
        if found is None:
            raise NotFound(404, "NotFound", f'{resource.plural} "{name}" not found')
        if resource.kind in ("Certification", "WorkloadRun"):
            return self._run_view(found)
        return copy.deepcopy(found)

    def list(
        self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None, field_selector: str | None = None
    ) -> ObjectList:
        items = []
        for (plural, ns, _), obj in sorted(self._store.items()):
            if plural != resource.plural or (namespace and ns != namespace):
                continue
            obj = copy.deepcopy(obj)
            if resource.kind == "Job" and not self._terminal():
                obj.pop("status", None)
            items.append(obj)
        return ObjectList(tuple(items), "1")

    def create(self, obj: Mapping[str, Any], resource: Resource | None = None) -> dict[str, Any]:
        created = copy.deepcopy(dict(obj))
        meta = created.setdefault("metadata", {})
        resource = resource or _plural_of(created)
        key = _key(resource, meta["name"], meta.get("namespace"))
        if key in self._store:
            raise AlreadyExists(409, "AlreadyExists", f'{resource.plural} "{meta["name"]}" already exists')
        meta["uid"] = next(self._uids)
        self.calls.append(f"create {created['kind']} {meta['name']}")
        self._store[key] = created
        if created["kind"] in ("Certification", "WorkloadRun"):
            self._submitted(created)
        return copy.deepcopy(created)

    def replace(self, resource: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        self._store[_key(resource, meta["name"], meta.get("namespace"))] = copy.deepcopy(dict(obj))
        return copy.deepcopy(dict(obj))

    def delete(
        self, resource: Resource, name: str, namespace: str | None = None, *, uid: str | None = None, propagation: str = "Background"
    ) -> bool:
        self.calls.append(f"delete {resource.kind} {name}")
        if self._store.pop(_key(resource, name, namespace), None) is None:
            raise NotFound(404, "NotFound", f'{resource.plural} "{name}" not found')
        if resource.kind == "Namespace":
            for key in [k for k in self._store if k[1] == name]:
                del self._store[key]
        return True


def _plural_of(obj: Mapping[str, Any]) -> Resource:
    kind = str(obj["kind"])
    plural = {
        "BandwidthMeasurement": "bandwidthmeasurements",
        "GoodputMeasurement": "goodputmeasurements",
        "Job": "jobs",
        "Workflow": "workflows",
        "Certification": "certifications",
        "WorkloadRun": "workloadruns",
        "ConfigMap": "configmaps",
        "Namespace": "namespaces",
        "Secret": "secrets",
        "RoleBinding": "rolebindings",
    }.get(kind, kind.lower() + "s")
    return Resource("", "v1", plural, kind, namespaced=kind != "Namespace")


def _golden_objects(case: str) -> list[dict[str, Any]]:
    text = (GOLDEN / "report" / case / "objects.yaml").read_text(encoding="utf-8")
    return [d for d in yaml.safe_load_all(text) if d]


def _cert_file(objects: list[dict[str, Any]], path: Path) -> Path:
    run = copy.deepcopy(next(o for o in objects if o["kind"] == "Certification"))
    run.pop("status", None)
    run["metadata"] = {"name": run["metadata"]["name"], "namespace": run["metadata"]["namespace"]}
    path.write_text(yaml.safe_dump(run, sort_keys=True), encoding="utf-8")
    return path


def _placeholders(objects: list[dict[str, Any]], tmp_path: Path, results: Path) -> dict[str, str]:
    """What ``{results}``, ``{cert_file}`` and ``{repo}`` in a case's ``args`` stand for."""
    fields = {"results": str(results), "repo": str(REPO), "cert_file": ""}
    if any(o["kind"] == "Certification" for o in objects):
        fields["cert_file"] = str(_cert_file(objects, tmp_path / "cert.yaml"))
    return fields


def _report_stream(kind: str, code: int, stdout: str, stderr: str) -> str:
    """Where the CLI prints the report: stdout once the run ended (so `run --wait > report.txt`
    keeps it, whatever the verdict), stderr for the partial report of a wait that timed out."""
    return stderr if code == 3 else stdout


def invoke(monkeypatch: pytest.MonkeyPatch, cluster: ScriptedCluster, args: list[str], now: str | None = None) -> tuple[int, str, str]:
    """Run ``nvcrectl`` in-process against ``cluster`` with the fake clock; (exit code, stdout, stderr).

    ``now`` pins the moment a live report dates running categories to (the report golden's)."""
    from typer.testing import CliRunner

    from nvcre.cli import common, main
    from nvcre.runtime.measure.profile import parse_rfc3339
    from nvcre.runtime.ops import queries, submit, wait

    if now is not None:
        moment = parse_rfc3339(now)
        monkeypatch.setattr(queries, "_now", lambda: moment)
    fake_time = FakeTime()
    monkeypatch.setattr(wait, "time", fake_time)
    monkeypatch.setattr(submit, "_wait_gone", lambda kube, resource, name, ns, timeout, poll: _gone(kube, resource, name, ns))
    monkeypatch.setattr(common, "kube_client", lambda kubeconfig, context: cluster)
    main.mount_commands()
    result = CliRunner().invoke(main.app, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _gone(kube: ScriptedCluster, resource: Resource, name: str, namespace: str | None) -> bool:
    try:
        kube.get(resource, name, namespace)
    except NotFound:
        return True
    return False


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_run_output_matches_the_golden_files(case: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, update_golden: bool) -> None:
    spec = yaml.safe_load((case / "case.yaml").read_text(encoding="utf-8"))
    objects = _golden_objects(spec["objects"])
    results = tmp_path / "results.json"
    fields = _placeholders(objects, tmp_path, results)
    args = [str(a).format(**fields) for a in spec["args"]]
    cluster = ScriptedCluster(objects)
    kind = cluster._golden_run()["kind"]

    report_case = GOLDEN / "report" / spec["objects"] / "case.yaml"
    now = yaml.safe_load(report_case.read_text(encoding="utf-8")).get("now") if report_case.is_file() else None
    code, stdout, stderr = invoke(monkeypatch, cluster, args, now)

    check(case / "stderr.txt", normalise(stderr, results), update_golden)
    check(case / "stdout.txt", normalise(stdout, results), update_golden)
    assert code == spec["exit"], stderr
    report = (GOLDEN / "report" / spec["objects"] / "expected.txt").read_text(encoding="utf-8")
    assert report in _report_stream(kind, code, stdout, stderr)  # the same report the report goldens hold
    if "--results-file" in spec["args"]:
        expected = json.loads((GOLDEN / "report" / spec["objects"] / "expected.json").read_text(encoding="utf-8"))
        assert json.loads(results.read_text(encoding="utf-8")) == expected
    if "--cleanup" in spec["args"]:
        assert not any(k[0] == "certifications" for k in cluster._store), "cleanup left the Certification"
    if code == 3:  # timed out: the run is left alone and the output says how to follow it
        assert "did not complete within" in stderr.splitlines()[-1]
        assert not any(call.startswith("delete ") for call in cluster.calls), "a timed-out wait deleted something"


def test_workloadrun_status_prints_nvcres_one_word_and_json(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = yaml.safe_load((GOLDEN / "cli" / "workloadrun" / "case.yaml").read_text(encoding="utf-8"))
    cluster = ScriptedCluster(_golden_objects(spec["objects"]))
    run = cluster._golden_run()
    name, namespace = run["metadata"]["name"], run["metadata"]["namespace"]
    cluster.create(run)
    code, stdout, _ = invoke(monkeypatch, cluster, ["workloadrun", "status", name, "-n", namespace])
    word = stdout.strip()
    assert code == 0 and stdout == f"{word}\n" and word in ("Pending", "InProgress", "Succeeded", "Failed")
    code, stdout, _ = invoke(monkeypatch, cluster, ["workloadrun", "status", name, "-n", namespace, "-o", "json"])
    answer = json.loads(stdout)
    assert (answer["name"], answer["namespace"]) == (name, namespace)
    assert answer["status"] in ("Pending", "InProgress", "Succeeded", "Failed") and "failedNodes" not in answer


def test_the_filter_hides_only_volatile_parts() -> None:
    assert normalise(f"reading {REPO}/examples/w.yaml") == "reading <REPO>/examples/w.yaml"
    raw = (
        "Certification nvcrectl-20261202-200501 created in namespace nvcrectl-20261202-200501.\n"
        "[watch] communication/nccl-all-reduce: InProgress (1h2m3s; jobs running 1, blocked 0, done 0)\n"
        "[watch] Certification succeeded. (45s)\n"
        "error: certification did not complete within 4m0s (ran for 4m1s)\n"
        "│  Runtime:   11m 55s (1s)\n"
    )
    assert normalise(raw) == (
        "Certification nvcrectl-<TIMESTAMP> created in namespace nvcrectl-<TIMESTAMP>.\n"
        "[watch] communication/nccl-all-reduce: InProgress (<ELAPSED>; jobs running 1, blocked 0, done 0)\n"
        "[watch] Certification succeeded. (<ELAPSED>)\n"
        "error: certification did not complete within 4m0s (ran for <ELAPSED>)\n"
        "│  Runtime:   11m 55s (1s)\n"  # report lines keep their numbers
    )


# ------------------------------------------------------------------ the progress view


def _progress(elapsed: float, status: str = "InProgress") -> Any:
    from nvcre.runtime.ops.wait import CategoryProgress, Progress

    return Progress(elapsed, 600.0, status, (CategoryProgress("communication/nccl-all-reduce", status),), 1, 0, 0, 0)


def test_plain_view_prints_changes_and_a_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.cli.progress import _PlainProgress

    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    view = _PlainProgress()
    for elapsed in (0, 2, 14, 16, 18):
        view(_progress(elapsed))
    view(_progress(20, "Succeeded"))
    view.close()
    assert err.getvalue().splitlines() == [
        "[watch] communication/nccl-all-reduce: InProgress (0s)",
        "[watch] communication/nccl-all-reduce: InProgress (16s; jobs running 1, blocked 0, done 0)",
        "[watch] communication/nccl-all-reduce: Succeeded (20s)",
    ]
    assert "\x1b" not in err.getvalue()


def test_terminal_view_is_a_rich_live_table() -> None:
    from rich.console import Console

    from nvcre.cli.progress import _LiveProgress

    out = io.StringIO()
    view = _LiveProgress(Console(file=out, force_terminal=True, width=100, color_system="standard"))
    view(_progress(3))
    view(_progress(75, "Succeeded"))
    view.close()
    shown = out.getvalue()
    assert "\x1b[" in shown  # terminal control sequences: a live, redrawn view
    assert "communication/nccl-all-reduce" in shown and "Succeeded" in shown
    assert "1m15s of 10m0s" in shown
    assert "jobs: 1 running, 0 blocked, 0 done (0 failed)" in shown


def test_the_view_follows_whether_stderr_is_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.cli import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert isinstance(progress.progress_view(), progress._PlainProgress)
    monkeypatch.setattr(sys, "stderr", Terminal())
    view = progress.progress_view()
    try:
        assert isinstance(view, progress._LiveProgress)
    finally:
        view.close()
