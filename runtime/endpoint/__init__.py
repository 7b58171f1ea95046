"""The controller's HTTP endpoints: ``/metrics`` and the health probes (:mod:`.serve`), and the
serving certificate of the secured metrics endpoint (:mod:`.tls`)."""
