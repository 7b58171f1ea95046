"""The compiler passes, one module each, named with a verb; ``nvcre.compiler.pipeline`` runs them.

A Certification category goes through them in this order (``ORDER``)::

    resolve_options -> apply_gpu_defaults -> size_workload -> instantiate_catalog
    -> apply_overlays -> merge_env -> rewrite_gang -> override_image -> inject_pull_secrets
    -> merge_workload_labels -> stamp_provenance -> validate_workflow

A WorkloadRun starts with ``WORKLOADRUN_ORDER`` instead of the first four, then runs the
same eight from ``apply_overlays`` on. Each pass is a pure function
``(unit, ctx) -> (unit, diagnostics)``; validators (``check_workloadrun``,
``validate_workflow``) report problems and return the unit they were given.
"""

#: The passes every instantiated Workflow goes through, for a Certification category and a WorkloadRun alike.
WORKFLOW_ORDER: tuple[str, ...] = (
    "apply_overlays",
    "merge_env",
    "rewrite_gang",
    "override_image",
    "inject_pull_secrets",
    "merge_workload_labels",
    "stamp_provenance",
    "validate_workflow",
)

#: A Certification category, in order.
ORDER: tuple[str, ...] = (
    "resolve_options",
    "apply_gpu_defaults",
    "size_workload",
    "instantiate_catalog",
) + WORKFLOW_ORDER

#: A WorkloadRun, in order.
WORKLOADRUN_ORDER: tuple[str, ...] = (
    "check_workloadrun",
    "resolve_workloadrun",
    "apply_workloadrun_gpu_defaults",
    "size_workloadrun",
    "instantiate_workloadrun",
) + WORKFLOW_ORDER
