"""Expected platform values shared by the overlay tests, written from the platform facts, not the templates."""

MPI = ["communication/nccl-all-reduce", "communication/nccl-all-gather", "communication/nccl-alltoall"]
LOOPBACKS = ["communication/nccl-loopback", "communication/nccl-loopback-nvswitch"]
TRAINING = ["training/nemotron5-8b", "training/nemotron5-56b"]
DCGM = "diagnostics/dcgm-level4"
GPU_PRESENT = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
GPU_ANY = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
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
#: the Forge + L40 collective profile (NVCRE _lib/nccl/forge-ib-env.yaml, NCCL_DEBUG aside)
FORGE_IB = {
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_IB_SL": "0",
    "NCCL_IB_SPLIT_DATA_ON_QPS": "0",
    "NCCL_SOCKET_IFNAME": "eth0",
    "OMPI_MCA_coll_hcoll_enable": "0",
    "OMPI_MCA_coll_ucc_enable": "0",
    "OMPI_MCA_orte_keep_fqdn_hostnames": "t",
    "UCX_IB_PCI_RELAXED_ORDERING": "on",
    "UCX_MEM_EVENTS": "n",
    "UCX_NET_DEVICES": "eth0",
    "UCX_TLS": "tcp",
}

GB200_BASE = {"NCCL_CUMEM_ENABLE": "1", "NCCL_P2P_NET_CHUNKSIZE": "2097152"}
AZURE_IB = {
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "NCCL_SOCKET_IFNAME": "eth0",
    "NCCL_TOPO_FILE": "/etc/nccl/topo.xml",
}
AZURE_H100_EXTRA = {
    "OMPI_MCA_coll_hcoll_enable": "0",
    "OMPI_MCA_orte_keep_fqdn_hostnames": "t",
    "UCX_IB_PCI_RELAXED_ORDERING": "on",
    "UCX_MEM_EVENTS": "n",
    "UCX_NET_DEVICES": "eth0",
    "UCX_TLS": "tcp",
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    "NCCL_MIN_NCHANNELS": "32",
    "NCCL_NET_GDR_LEVEL": "5",
    "NCCL_NVLS_ENABLE": "1",
    "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_IGNORE_CPU_AFFINITY": "1",
    "NCCL_P2P_NET_CHUNKSIZE": "2097152",
}
AZURE_A100 = {
    "NCCL_COLLNET_ENABLE": "1",
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_SOCKET_IFNAME": "eth0",
    "NCCL_TOPO_FILE": "/etc/nccl/topo.xml",
    "NCCL_IB_HCA": "mlx5",
    "NCCL_IGNORE_CPU_AFFINITY": "1",
    "NCCL_IB_SPLIT_DATA_ON_QPS": "0",
    "NCCL_IB_AR_THRESHOLD": "0",
    "UCX_TLS": "rc,cuda_copy,cuda_ipc",
    "UCX_NET_DEVICES": "all",
}
TOGETHER_HCAS = "=mlx5_7:1,mlx5_8:1,mlx5_9:1,mlx5_10:1,mlx5_11:1,mlx5_12:1,mlx5_5:1,mlx5_6:1,mlx5_2:1,mlx5_3:1,mlx5_0:1,mlx5_1:1"
TOGETHER_IB = {
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "NCCL_IGNORE_CPU_AFFINITY": "1",
    "NCCL_SOCKET_IFNAME": "eth0",
    "NCCL_IB_QPS_PER_CONNECTION": "2",
    "NCCL_IB_SPLIT_DATA_ON_QPS": "0",
    "NCCL_IB_AR_THRESHOLD": "0",
    "NCCL_IB_HCA": TOGETHER_HCAS,
    "NCCL_CUMEM_ENABLE": "1",
}
