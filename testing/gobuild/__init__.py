"""The pinned test control plane's build: :mod:`.build` compiles etcd, Kubernetes, the simulated
cluster's controllers, the tools the tests run and the real nodes' programs from their Go modules
into a user cache (``python -m nvcre.testing.gobuild.build --help``)."""
