"""Node detection fixes the eleventh real-output hold-out led to, and the limits they keep.

The corpus test (``tests/runtime/measure/test_profile_real_corpus.py``) reads the whole pieces;
these tests pin the rules. Each rule comes from a piece under ``golden/measure/real/nodes/``:

- a Linode LKE node labelled ``nvidia.com/gpu.product=NVIDIA-RTX-4000-Ada-Generation``
  (https://github.com/linode/lke-ai-conformance/blob/af1e2ef1f6143c7c81117a16dce4bb6e61f0a450/README.md)
  and a vSphere Kubernetes Service node whose vGPU is ``GRID-A100-40C``
  (https://github.com/cncf/k8s-ai-conformance/blob/6a8c0af3a2b6571d72f522884ebc30609c11e0e9/v1.35/vks/dra_support.md):
  every RTX product parsed to the one key ``rtx`` (as every Tesla product once became ``tesla``)
  and the vGPU to ``grid``. A product line (RTX, GTX, TITAN) now keeps its model token and
  qualifiers, and the GeForce, Quadro and GRID brands are dropped like Tesla;
- an OpenShift node on a g4dn.xlarge known only by GPU Feature Discovery's labels
  (https://github.com/NVIDIA/cloud-native-docs/blob/52dcb7b8d956784344e241df476de17094a4574c/openshift/time-slicing-gpus-in-openshift.rst):
  ``nvidia.com/gpu.machine`` holds the instance type on a public cloud, and now counts as an
  instance-type label after the two well-known ones;
- a Volcano guide's GCE node that advertises ``attachable-volumes-gce-pd``
  (https://github.com/volcano-sh/volcano/blob/ed72c7c815a9fd547a787134676f73d42e9d049c/docs/user-guide/how_to_use_gpu_number.md):
  a kubelet advertises its cloud's in-tree disk attach limit, which now places a node without
  ``spec.providerID`` on AWS, GCP or Azure.
"""

from __future__ import annotations

import pytest

from nvcre.compiler.detect.hints import instance_type
from nvcre.compiler.detect.platform import read_platform
from nvcre.compiler.detect.products import parse_product


@pytest.mark.parametrize(
    ("product", "arch"),
    [
        ("NVIDIA-RTX-4000-Ada-Generation", "rtx4000ada"),
        ("NVIDIA-RTX-6000-Ada-Generation", "rtx6000ada"),
        ("NVIDIA-RTX-A6000", "rtxa6000"),
        ("NVIDIA RTX A4000", "rtxa4000"),
        ("NVIDIA-GeForce-RTX-4090", "rtx4090"),
        ("NVIDIA-GeForce-RTX-3090-Ti", "rtx3090ti"),
        ("NVIDIA GeForce GTX 1080 Ti", "gtx1080ti"),
        ("Quadro-RTX-8000", "rtx8000"),
        ("Quadro-P6000", "p6000"),
        ("NVIDIA-TITAN-V", "titanv"),
        ("GRID-A100-40C", "a100"),
        ("GRID T4-16Q", "t4"),
        # the named family still comes first, and a lone line name stays what it says
        ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "rtxpro6000"),
        ("RTX", "rtx"),
        # products of no line keep the first token
        ("NVIDIA-H100-80GB-HBM3", "h100"),
        ("Tesla-T4-SHARED", "t4"),
    ],
)
def test_distinct_rtx_geforce_quadro_and_vgpu_products_get_distinct_keys(product: str, arch: str) -> None:
    assert parse_product(product) == arch


def test_gpu_feature_discoverys_machine_label_names_a_public_cloud_instance_type() -> None:
    found = instance_type({"nvidia.com/gpu.machine": "g4dn.xlarge"})
    assert found is not None and (found.label, found.platform) == ("nvidia.com/gpu.machine", "aws")
    # an on-prem machine's product name is no row
    assert instance_type({"nvidia.com/gpu.machine": "PowerEdge-XE9680"}) is None
    assert instance_type({"nvidia.com/gpu.machine": "Compute-Instance"}) is None
    # the well-known labels come first
    both = instance_type({"node.kubernetes.io/instance-type": "a2-highgpu-8g", "nvidia.com/gpu.machine": "g4dn.xlarge"})
    assert both is not None and both.platform == "gcp"
    node = {"metadata": {"name": "n", "labels": {"nvidia.com/gpu.machine": "g4dn.xlarge"}}}
    assert read_platform(node).platform == "aws"


@pytest.mark.parametrize(
    ("resource", "platform"),
    [("attachable-volumes-gce-pd", "gcp"), ("attachable-volumes-aws-ebs", "aws"), ("attachable-volumes-azure-disk", "azure")],
)
def test_an_in_tree_disk_attach_limit_places_a_node_on_its_cloud(resource: str, platform: str) -> None:
    for block in ("allocatable", "capacity"):
        node = {"metadata": {"name": "n", "labels": {}}, "status": {block: {"cpu": "2", resource: "127"}}}
        reading = read_platform(node)
        assert (reading.platform, reading.basis) == (platform, f"resource {resource}"), block
    # a providerID still decides
    node = {"metadata": {"name": "n"}, "spec": {"providerID": "kind://docker/k/k"}, "status": {"allocatable": {resource: "127"}}}
    assert read_platform(node).platform == "onprem"


def test_other_attach_limits_name_no_cloud() -> None:
    for resource in ("attachable-volumes-csi-hostpath.csi.k8s.io", "attachable-volumes-cinder"):
        node = {"metadata": {"name": "n"}, "status": {"allocatable": {resource: "25"}}}
        assert read_platform(node).platform == "onprem", resource
