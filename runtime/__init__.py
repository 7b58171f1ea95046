"""nvcre.runtime: applies compiled manifests and observes pods, logs and node health.

The runtime layer holds no code yet; the compiler and the test control plane come first.
It will import from ``nvcre.compiler`` and never the other way round.
"""
