"""JobSet, the Kubeflow Trainer and the nvcre controller next to a real-node environment.

They are started exactly as the simulated cluster starts them (the same binaries from the build
cache, the same configuration and flags, the same webhook registrations on 127.0.0.1; the nvcre
controller as it ships, ``python -m nvcre.runtime``), as processes of the environment's control
plane, so stopping the control plane stops them: on exit, Ctrl-C and a failed start alike.

No gang scheduler runs here (no kai-scheduler): Certifications rendered for this environment
carry no ``gangScheduler``, and the pods of a group are placed one by one by kube-scheduler.
"""

from __future__ import annotations

import time
from typing import Any

from ..controlplane import ControlPlane
from ..errors import ControlPlaneError

#: the names their processes carry in the control plane's process table
PROCESS_NAMES = ("jobset-controller", "trainer-controller-manager", "nvcre-controller")


def start_workload_controllers(cluster: Any) -> dict[str, float]:
    """Start JobSet, the Trainer and the nvcre controller; returns seconds spent on each.

    ``cluster`` is a started environment with ``plane`` (its :class:`ControlPlane`) and
    ``kubeconfig``, what the simulated session's controller starter reads too. Raises :class:`ControlPlaneError` when a binary is not built or a process does
    not turn ready; what was started by then stays in the control plane, which stops it."""
    from ..simcluster import SimClusterError, locate_sim
    from ..simcontrollers import start_jobset, start_trainer
    from ..simsession import _start_controller, controller_available

    try:
        found = locate_sim()
    except SimClusterError as exc:
        raise ControlPlaneError(str(exc)) from None
    if not controller_available():
        raise ControlPlaneError("the nvcre controller (python -m nvcre.runtime) cannot be imported here")
    plane: ControlPlane = cluster.plane
    spent: dict[str, float] = {}
    begin = time.monotonic()
    start_jobset(plane, found.jobset)
    spent["jobset"] = round(time.monotonic() - begin, 2)
    begin = time.monotonic()
    start_trainer(plane, found.trainer)
    spent["trainer"] = round(time.monotonic() - begin, 2)
    begin = time.monotonic()
    _start_controller(cluster)
    spent["nvcre-controller"] = round(time.monotonic() - begin, 2)
    return spent
