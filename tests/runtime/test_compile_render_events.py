"""Render notes the controller turns into Events on the Certification / WorkloadRun, as NVCRE's controllers do."""

from __future__ import annotations

from nvcre.compiler.diagnostics import info, warning
from nvcre.runtime.compile import render_events


def test_fallbacks_and_nic_detection_become_events_once_with_the_clis_text():
    notes = [
        warning("GPUArchitectureDefaults", "spec", 'GPU architecture "x1" has no entry'),
        info("NICResourceDetection", "spec.categories[0]", "NIC resource not chosen: no target node has an rdma/* resource"),
        warning("GKENetworkDetection", "spec", "GKE network names not detected"),
        warning("GKENetworkDetection", "spec", "GKE network names not detected"),
        info("TCPXOPluginDetection", "spec", "plugin version detected"),
        info("PlatformDefaulted", "spec", "using onprem"),
    ]
    assert render_events(notes) == [
        ("Warning", "GPUArchitectureDefaults", 'GPU architecture "x1" has no entry'),
        ("Normal", "NICResourceDetection", "NIC resource not chosen: no target node has an rdma/* resource"),
        ("Warning", "GKENetworkDetection", "GKE network names not detected"),
    ]
