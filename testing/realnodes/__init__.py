"""Real worker nodes for the test cluster: a kubelet, a containerd and runc per node, a CNI bridge,
CoreDNS and the pods' sandbox image, all on this machine and all networking inside a network
namespace the environment makes itself (see docs/simcluster.md, "Real nodes")."""
