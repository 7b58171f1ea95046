"""Node detection fixes the twelfth real-output hold-out led to, and the limits they keep.

The corpus test (``tests/runtime/measure/test_profile_real_corpus.py``) reads the whole pieces;
these tests pin the rules. Each rule comes from a piece under ``golden/measure/real/nodes/``:

- an OpenShift node whose four A100s InstaSlice hands out as dynamic MIG slices: it advertises
  ``nvidia.com/gpu: 0`` beside ``instaslice.redhat.com/mig-1g.5gb: 28`` and other profiles
  (https://github.com/openshift/instaslice-operator/issues/285). The 0 read as a device plugin
  advertising nothing yet, so the node was kept with no count; a MIG profile under another
  domain now splits the node's GPUs as the device plugin's own ``nvidia.com/mig-<profile>``
  resources do: 0 whole GPUs;
- a 2017 kops node on an AWS ``p2.xlarge`` known only by its instance-type label
  (https://github.com/kubernetes/kops/issues/2493): the instance-type table had no row for the
  previous-generation P2 (K80) sizes, nor for the G3 (M60) ones.
"""

from __future__ import annotations

import pytest

from nvcre.compiler.detect import node_gpu_counts
from nvcre.compiler.detect.capacity import is_mig_resource, mig_devices
from nvcre.compiler.detect.hints import count_hint, instance_type
from nvcre.compiler.facts import ClusterFacts


def _node(name: str, allocatable: dict[str, str]) -> dict[str, object]:
    return {"kind": "Node", "metadata": {"name": name, "labels": {}}, "status": {"allocatable": allocatable}}


def test_mig_slices_under_another_domain_split_every_gpu_of_a_node_that_advertises_none_whole() -> None:
    slices = {
        "instaslice.redhat.com/mig-1g.5gb": "28",
        "instaslice.redhat.com/mig-7g.40gb": "4",
        "instaslice.redhat.com/mig-1g.5gb+me": "28",
    }
    split = _node("split", {"nvidia.com/gpu": "0", **slices, "instaslice.redhat.com/accelerator-memory-quota": "160Gi"})
    facts = ClusterFacts(nodes=(split,))
    found = node_gpu_counts(facts, facts.nodes)["split"]
    assert (found.count, found.source) == (0, "mig")
    assert mig_devices(split) == tuple(sorted(slices))
    # whole GPUs beside the slices still count, and slices at 0 split nothing
    whole = _node("whole", {"nvidia.com/gpu": "2", **slices})
    empty = _node("empty", {"nvidia.com/gpu": "0", "instaslice.redhat.com/mig-1g.5gb": "0"})
    facts = ClusterFacts(nodes=(whole, empty))
    counts = node_gpu_counts(facts, facts.nodes)
    assert (counts["whole"].count, counts["empty"].count) == (2, None)


@pytest.mark.parametrize(
    ("key", "mig"),
    [
        ("nvidia.com/mig-1g.10gb", True),
        ("nvidia.com/mig-3g.40gb", True),
        ("instaslice.redhat.com/mig-1g.5gb", True),
        ("instaslice.redhat.com/mig-1g.5gb+me", True),
        # not a MIG profile: no domain, no profile after the prefix, or another resource
        ("mig-1g.5gb", False),
        ("example.com/migration-slots", False),
        ("example.com/mig-devices", False),
        ("nvidia.com/gpu.shared", False),
        ("instaslice.redhat.com/accelerator-memory-quota", False),
    ],
)
def test_what_counts_as_a_mig_device_resource(key: str, mig: bool) -> None:
    assert is_mig_resource(key) is mig


@pytest.mark.parametrize(
    ("size", "arch", "gpus"),
    [("p2.xlarge", "k80", 1), ("p2.8xlarge", "k80", 8), ("p2.16xlarge", "k80", 16), ("g3s.xlarge", "m60", 1), ("g3.16xlarge", "m60", 4)],
)
def test_previous_generation_aws_gpu_sizes_name_their_gpu_and_count(size: str, arch: str, gpus: int) -> None:
    labels = {"beta.kubernetes.io/instance-type": size}
    found = instance_type(labels)
    assert found is not None and (found.row["architecture"], found.platform) == (arch, "aws")
    hint = count_hint(labels)
    assert hint is not None and hint.count == gpus
