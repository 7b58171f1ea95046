"""Second lowering, second half: Workflow + planned group -> the exact objects the controller creates (pure).

Every object the runtime creates comes out of these functions, fully named, namespaced, labelled
and owned; the runtime applies them as they are and builds no manifest of its own:

* :func:`expand_certification` / :func:`expand_workloadrun`: the Workflows of a source object;
* :func:`expand_workflow_dependencies`: the dependencies created once per Workflow;
* :func:`expand_job`: the nvcre Job of one planned group and iteration;
* :func:`expand_job_dependencies`: that Job's own copies of the job-scoped dependencies;
* :func:`expand_workload`: the Job's TrainJob and its measurement objects;
* :func:`expand_node_results`: the succeeded/failed node-list ConfigMaps.
"""

from __future__ import annotations

from .dependencies import expand_job_dependencies, expand_workflow_dependencies
from .job import expand_job, job_name
from .node_results import decode_failed, decode_succeeded, expand_node_results
from .sources import expand_certification, expand_workloadrun
from .workload import expand_workload

__all__ = [
    "decode_failed",
    "decode_succeeded",
    "expand_certification",
    "expand_job",
    "expand_job_dependencies",
    "expand_node_results",
    "expand_workflow_dependencies",
    "expand_workload",
    "expand_workloadrun",
    "job_name",
]
