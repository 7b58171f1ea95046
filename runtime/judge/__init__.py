"""nvcre.runtime.judge: pure judgement over observed objects.

``thresholds`` evaluates performance thresholds, ``health`` the node health monitor, and
``attribution`` decides which nodes a failure is blamed on and which pod's log explains it,
``measured`` fails the Job of a bandwidth measurement whose run could not be trusted.
``verdict`` holds THE verdict model that every report (text, JSON, metrics, MCP) projects.
Nothing here imports the Kubernetes client or reads a clock.
"""
