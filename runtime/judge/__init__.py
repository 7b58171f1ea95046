"""nvcre.runtime.judge: pure judgement over observed objects.

``thresholds`` evaluates performance thresholds, ``health`` the node health monitor, and
``attribution`` decides which nodes a failure is blamed on and which pod's log explains it,
``measured`` fails the Job of a bandwidth measurement whose run could not be trusted.
``verdict`` holds THE verdict model that every report (text, JSON, metrics, MCP) projects.
The tiers' own rules live here too, each returning what the tier then writes: ``conditions``
(the lifecycle and verdict conditions of a status), ``pods`` (which pods are a Job's, where they
run, why they wait), ``restart`` (checkpoint restarts), ``stall`` and ``log_read`` (is a
training run still stepping, by the measurement's clock), ``pod_references`` (what a pod may
name that admission never checked) and ``gang_contract`` (what a Workflow's gang scheduling
must keep after overrides).
Nothing here imports the Kubernetes client or reads a clock.
"""
