"""The shared vocabulary: the API group and version, and every label, annotation, finalizer,
ConfigMap key, object-name prefix and RBAC name that both sides of nvcre spell.

The compiler writes these names onto the objects it renders and the runtime reads them back
(to find a Workflow's Jobs, a Job's pods, a group's nodes, a diagnose run's planner, the
RoleBinding a run namespace needs). Both sides import them from here, so a name is spelled
once. The module is constants only: it imports nothing and may be imported from any layer.
"""

from __future__ import annotations

__all__ = [
    "ANNOTATION_APPLIED_OVERLAYS",
    "ANNOTATION_CLAIM_UID",
    "ANNOTATION_CLEANUP_RETRY",
    "ANNOTATION_INSTALLED_VERSION",
    "ANNOTATION_DIAGNOSE_PLANNER",
    "ANNOTATION_DIAGNOSE_PRIOR",
    "ANNOTATION_GOODPUT_PRIOR_ATTEMPTS",
    "ANNOTATION_GOODPUT_SAMPLING",
    "ANNOTATION_GROUP_NODES",
    "ANNOTATION_JOB_UID",
    "ANNOTATION_RENDER_FACTS",
    "ANNOTATION_REQUESTED_TEST_SCALE",
    "ANNOTATION_WORKFLOW_UID",
    "API_VERSION",
    "CERTIFICATION_FINALIZER",
    "CONFIGMAP_FAILED_NODES_KEY",
    "CONFIGMAP_SUCCEEDED_NODES_KEY",
    "CONTROLLER_MANAGER",
    "CONTROLLER_SERVICE_ACCOUNT",
    "FAILED_NODES_PREFIX",
    "GROUP",
    "JOB_FINALIZER",
    "LABEL_CATEGORY_DOMAIN",
    "LABEL_CATEGORY_VARIANT",
    "LABEL_CERTIFICATION",
    "LABEL_GROUP",
    "LABEL_INSTALLED_BY",
    "LABEL_JOB",
    "LABEL_NVCRE_WORKLOAD_RUN",
    "LABEL_WORKFLOW",
    "LABEL_WORKLOADRUN",
    "LEADER_ROLE",
    "MANAGER_ROLE",
    "RESERVED_PREFIX",
    "RUN_BINDING",
    "RUN_ROLE",
    "SUCCEEDED_NODES_PREFIX",
    "VERSION",
    "WORKFLOW_FINALIZER",
    "WORKLOADRUN_FINALIZER",
]

#: the API group of every nvcre kind, and the prefix of every label, annotation and finalizer below
GROUP = "nvcre.nvidia.com"
#: the version of every nvcre kind
VERSION = "v1alpha1"
#: the ``apiVersion`` every nvcre object is written with
API_VERSION = f"{GROUP}/{VERSION}"
#: label and annotation keys under this prefix belong to nvcre; users may not set them
RESERVED_PREFIX = f"{GROUP}/"

# ------------------------------------------------------------------ labels

#: on a Workflow: the Certification it was rendered from
LABEL_CERTIFICATION = f"{GROUP}/certification"
#: on a Workflow: the category it runs
LABEL_CATEGORY_DOMAIN = f"{GROUP}/category-domain"
LABEL_CATEGORY_VARIANT = f"{GROUP}/category-variant"
#: on a WorkloadRun's Workflow: the WorkloadRun (our spelling)
LABEL_WORKLOADRUN = f"{GROUP}/workloadrun"
#: on a WorkloadRun's Workflow: the WorkloadRun, as NVCRE labels it (``kubectl get -l`` selectors)
LABEL_NVCRE_WORKLOAD_RUN = f"{GROUP}/workload-run"
#: on a Job, its measurements, ConfigMaps and workload: the Workflow they belong to
LABEL_WORKFLOW = f"{GROUP}/workflow"
#: on a Job: the group of the Workflow's plan it runs
LABEL_GROUP = f"{GROUP}/group"
#: on a workload, its pods and its measurements: the Job they belong to
LABEL_JOB = f"{GROUP}/job"

# ------------------------------------------------------------------ annotations

#: on a Job: the nodes of its group, comma-separated
ANNOTATION_GROUP_NODES = f"{GROUP}/group-nodes"
#: on objects a Job owns that outlive a retried Job: the UID of the Job they were made for
ANNOTATION_JOB_UID = f"{GROUP}/job-uid"
#: on objects a Workflow owns: the UID of the Workflow they were made for
ANNOTATION_WORKFLOW_UID = f"{GROUP}/workflow-uid"
#: on a Workflow: the testScale the user asked for (before any lowering)
ANNOTATION_REQUESTED_TEST_SCALE = f"{GROUP}/requested-test-scale"
#: on a diagnose Workflow: the planner that chooses its rounds
ANNOTATION_DIAGNOSE_PLANNER = f"{GROUP}/diagnose-planner"
#: on a diagnose Workflow: the groups of the failed run it follows, JSON ``{"groups": [{nodes, passed}]}``
ANNOTATION_DIAGNOSE_PRIOR = f"{GROUP}/diagnose-prior"
#: on a rendered Workflow: the platform overlays that matched, in order
ANNOTATION_APPLIED_OVERLAYS = f"{GROUP}/applied-overlays"
#: on a rendered Workflow: the cluster facts the render used
ANNOTATION_RENDER_FACTS = f"{GROUP}/render-facts"
#: on a GoodputMeasurement: what the attempts before a checkpoint restart contributed
ANNOTATION_GOODPUT_PRIOR_ATTEMPTS = f"{GROUP}/goodput-prior-attempts"
#: on a running GoodputMeasurement: its reads' running sums and cursor, kept across controller restarts
ANNOTATION_GOODPUT_SAMPLING = f"{GROUP}/goodput-sampling"
#: on a volume the controller may reclaim: the uid of the Workflow's claim it was provisioned for
ANNOTATION_CLAIM_UID = f"{GROUP}/claim-uid"
#: on a CRD ``setup reset`` is waiting to remove: a touch that makes the API server look again
ANNOTATION_CLEANUP_RETRY = f"{GROUP}/cleanup-retry"
#: on every object ``setup init``'s deps phase applied (Trainer, JobSet): which tool put it there
LABEL_INSTALLED_BY = f"{GROUP}/installed-by"
#: beside it: the version of what was installed
ANNOTATION_INSTALLED_VERSION = f"{GROUP}/installed-version"

# ------------------------------------------------------------------ finalizers and managers

JOB_FINALIZER = f"{GROUP}/finalizer"
WORKFLOW_FINALIZER = f"{GROUP}/workflow-finalizer"
CERTIFICATION_FINALIZER = f"{GROUP}/certification-finalizer"
WORKLOADRUN_FINALIZER = f"{GROUP}/workloadrun-finalizer"
#: the field manager of the runtime patch the controller adds to every TrainJob
CONTROLLER_MANAGER = f"{GROUP}/controller"

# ------------------------------------------------------------------ ConfigMap keys

#: ``succeeded-nodes-<uid8>``: sorted unique node names, comma-joined, gzipped
CONFIGMAP_SUCCEEDED_NODES_KEY = "succeeded-nodes.csv.gz"
#: ``failed-nodes-<uid8>``: a JSON array of ``{name, reason, message}``, gzipped
CONFIGMAP_FAILED_NODES_KEY = "failed-nodes.json.gz"

# ------------------------------------------------------------------ object-name prefixes

#: a Workflow's succeeded-nodes ConfigMap is named this prefix and the first eight characters of its UID
SUCCEEDED_NODES_PREFIX = "succeeded-nodes-"
#: a Workflow's failed-nodes ConfigMap, named the same way
FAILED_NODES_PREFIX = "failed-nodes-"

# ------------------------------------------------------------------ RBAC names

#: the controller's ServiceAccount, the subject every role below is bound to
CONTROLLER_SERVICE_ACCOUNT = "nvcre-manager"
#: the ClusterRole bound cluster-wide: the nvcre kinds, nodes, pods, Events...
MANAGER_ROLE = "nvcre-manager-role"
#: the Role on Leases in the controller's own namespace (leader election)
LEADER_ROLE = "nvcre-leader-election-role"
#: the ClusterRole holding what a run needs in its namespace
RUN_ROLE = "nvcre-run-role"
#: the RoleBinding, one per run namespace, that grants :data:`RUN_ROLE` to the controller
RUN_BINDING = "nvcre-manager-run"
