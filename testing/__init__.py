"""Test and development tooling for nvcre: a real Kubernetes control plane
(etcd + kube-apiserver built from Go modules), a simulated GPU cluster on top of it
(JobSet, Kubeflow Trainer, kwok and a workload player) and their pytest fixtures.

Nothing here is used by the render path or the runtime; import the submodules
explicitly (``nvcre.testing.controlplane``, ``nvcre.testing.simcluster``,
``nvcre.testing.pytest_plugin``).
"""
