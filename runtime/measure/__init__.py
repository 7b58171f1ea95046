"""nvcre.runtime.measure: pure parsers that turn workload log text into measurements.

``nccl`` reads nccl-tests bandwidth tables (``nccl_checks`` whether the run can be trusted),
``training`` reads Megatron-LM and NeMo 2 training logs and computes goodput, ``dcgm`` reads
``dcgmi diag`` results; ``profile`` compiles LogProfile patterns and cuts kubelet timestamps and
launcher tags off lines. Nothing here talks to a cluster or reads
a clock; callers pass the log text, the LogProfile spec and, where time matters, ``now``.
"""
