"""kwok Stage objects of the simulated cluster: what drives node and pod lifecycles.

kwok run without a configuration has no stages at all. The cluster installs kwok's
own upstream stages (copied out of its module by the build script): node
initialisation, heartbeats with leases, pods becoming Ready at once, and deletion.
Pods never finish on their own: the completion stage below fires only for a pod
the workload player has decided, reading the outcome from annotations:

``sim.nvcre.io/decided``    set by the player once the pod's log is in place
``sim.nvcre.io/exit-code``  exit code of every container (default 0; non-zero fails the pod)
``sim.nvcre.io/duration``   how long the container runs after the decision (Go duration, "3s")

A pod template may carry ``sim.nvcre.io/exit-code`` itself to force an outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

DECIDED = "sim.nvcre.io/decided"
EXIT_CODE = "sim.nvcre.io/exit-code"
DURATION = "sim.nvcre.io/duration"
UPSTREAM_STAGES = ("node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-delete")

_FINISH_TEMPLATE = """\
{{ $now := Now }}
{{ $code := or (index .metadata.annotations "sim.nvcre.io/exit-code") "0" }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  reason: PodCompleted
  status: "False"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  reason: PodCompleted
  status: "False"
  type: ContainersReady
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: {{ $code }}
      finishedAt: {{ $now | Quote }}
      reason: {{ if eq $code "0" }}Completed{{ else }}Error{{ end }}
      startedAt: {{ $now | Quote }}
{{ end }}
phase: {{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}
"""


def finish_stage() -> dict[str, Any]:
    """The stage that ends a decided pod after its duration, with its exit code."""
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": "sim-pod-finish"},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {
                "matchExpressions": [
                    {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                    {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                    {"key": f'.metadata.annotations["{DECIDED}"]', "operator": "Exists"},
                ]
            },
            "weight": 10,
            "delay": {
                "durationMilliseconds": 1000,
                "durationFrom": {"expressionFrom": f'.metadata.annotations["{DURATION}"]'},
            },
            "next": {
                "event": {"type": "Normal", "reason": "Finished", "message": "simulated container finished"},
                "statusTemplate": _FINISH_TEMPLATE,
            },
        },
    }


def upstream_stages(directory: Path, names: Sequence[str] = UPSTREAM_STAGES) -> list[dict[str, Any]]:
    """kwok's own Stage objects from ``directory`` (``<name>.yaml`` each)."""
    out = []
    for name in names:
        path = directory / f"{name}.yaml"
        try:
            doc = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise FileNotFoundError(f"kwok stage {name} missing at {path}; run `python -m nvcre.testing.gobuild.build --sim`") from exc
        if not isinstance(doc, dict) or doc.get("kind") != "Stage":
            raise ValueError(f"{path} is not a kwok Stage")
        out.append(doc)
    return out


def all_stages(directory: Path) -> list[dict[str, Any]]:
    return [*upstream_stages(directory), finish_stage()]
