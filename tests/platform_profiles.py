"""Expected platform values shared by the overlay tests, written from the platform facts, not the templates."""

MPI = ["communication/nccl-all-reduce", "communication/nccl-all-gather", "communication/nccl-alltoall"]
LOOPBACKS = ["communication/nccl-loopback", "communication/nccl-loopback-nvswitch"]
TRAINING = ["training/nemotron5-8b", "training/nemotron5-56b"]
DCGM = "diagnostics/dcgm-level4"
GPU_PRESENT = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
GPU_ANY = {"key": "nvidia.com/gpu", "operator": "Exists"}
ONPREM_IB = {
    "NCCL_CUMEM_ENABLE": "1",
    "NCCL_P2P_NET_CHUNKSIZE": "2097152",
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "SHARP_COLL_ENABLE_PCI_RELAXED_ORDERING": "1",
    "OMPI_MCA_btl_openib_warn_default_gid_prefix": "0",
    "PMIX_MCA_gds": "^ds12",
}
NSCALE_IB = {"NCCL_SOCKET_IFNAME": "eth0", **ONPREM_IB, "NCCL_NVLS_ENABLE": "1"}
MISTRAL_HCAS = "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1"
MISTRAL_IB = {
    "NCCL_IB_HCA": MISTRAL_HCAS,
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "UCX_NET_DEVICES": MISTRAL_HCAS,
    "SHARP_COLL_ENABLE_PCI_RELAXED_ORDERING": "1",
    "OMPI_MCA_btl_openib_warn_default_gid_prefix": "0",
    "PMIX_MCA_gds": "^ds12",
    "CUDA_CACHE_DISABLE": "1",
    "NCCL_DMABUF_ENABLE": "0",
}
FORGE_IB = {"NCCL_IB_PCI_RELAXED_ORDERING": "1", "NCCL_SOCKET_IFNAME": "eth0"}
