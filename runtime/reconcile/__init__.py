"""One reconciler per tier: sequences compile -> apply -> observe -> judge -> report."""
