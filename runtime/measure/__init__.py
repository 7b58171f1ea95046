"""nvcre.runtime.measure: pure parsers that turn workload log text into measurements.

``nccl`` reads nccl-tests bandwidth tables, ``training`` reads Megatron-style training logs and
computes goodput, ``dcgm`` reads ``dcgmi diag`` results. Nothing here talks to a cluster or reads
a clock; callers pass the log text, the LogProfile spec and, where time matters, ``now``.
"""
