"""nvcre.runtime: the controller that applies what the compiler produced and observes it.

``kube`` talks to the API server (the only user of the ``kubernetes`` client); ``reconcile``
holds one reconciler per tier; ``measure``, ``judge`` and ``report`` are pure; ``controller``
wires them together (``python -m nvcre.runtime``). See docs/runtime.md.
"""
