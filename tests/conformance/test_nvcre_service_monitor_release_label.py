"""The ServiceMonitor's ``release`` label is the documented value, as NVCRE's chart made it one.

NVCRE's CHANGELOG (0.6.0, ``NVIDIA/cluster-readiness-engine``): "``metrics.serviceMonitor.labels``
[...] Helm values. The ServiceMonitor's discovery label was previously hardcoded to
``release: prometheus``". A kube-prometheus-stack selects ServiceMonitors by ``release: <its
release name>``. docs/api.md ("Differences from NVCRE") documents the value and its default; these
tests hold the install to that text: the documented ``--set`` puts the label on the rendered
ServiceMonitor (and on nothing else), and the default the docs name is the chart's.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = shutil.which("nvcrectl", path=str(Path(sys.executable).parent)) or "nvcrectl"
SETTING = "metrics.serviceMonitor.labels.release"


def _differences() -> str:
    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    return text[text.index("## Differences from NVCRE") : text.index("### CLI flags beside NVCRE's")]


def _setup_render(*sets: str) -> list[dict[str, Any]]:
    args = [NVCRECTL, "setup", "render", "-o", "json"] + [a for s in sets for a in ("--set", s)]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


def _monitor(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (monitor,) = [o for o in objects if o["kind"] == "ServiceMonitor"]
    return monitor


def test_the_docs_name_the_value_that_sets_the_release_label() -> None:
    assert f"--set {SETTING}=<its release name>" in _differences()


def test_the_documented_setting_labels_the_rendered_service_monitor_and_nothing_else() -> None:
    objects = _setup_render(f"{SETTING}=kube-prometheus-stack")
    assert _monitor(objects)["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert [o["kind"] for o in objects if "release" in (o["metadata"].get("labels") or {})] == ["ServiceMonitor"]
    # the monitor still selects the metrics Service by NVCRE's label
    assert _monitor(objects)["spec"]["selector"]["matchLabels"]["control-plane"] == "manager"


def test_the_default_is_the_one_the_docs_state_in_setup_render_and_in_the_chart() -> None:
    row = re.search(r"\| The ServiceMonitor has no `release` label by default \(`metrics\.serviceMonitor\.labels` is empty", _differences())
    assert row, "docs/api.md states the default of the release label"
    assert "release" not in _monitor(_setup_render())["metadata"]["labels"]
    values = yaml.safe_load((REPO / "charts" / "nvcre" / "values.yaml").read_text(encoding="utf-8"))
    assert values["metrics"]["serviceMonitor"]["labels"] == {}
