"""Test and development tooling for nvcre: a real Kubernetes control plane
(etcd + kube-apiserver built from Go modules) and its pytest fixtures.

Nothing here is used by the render path; import the submodules explicitly
(``nvcre.testing.controlplane``, ``nvcre.testing.pytest_plugin``).
"""
