"""The only package that talks to the Kubernetes API (the kubernetes client lives here alone)."""
