"""``status.transport`` keeps every NCCL network name a log shows, as NVCRE does, within the CRD's bounds."""

from __future__ import annotations

from nvcre.runtime.reconcile.measurement_kinds import MAX_TRANSPORTS
from nvcre.runtime.reconcile.measurement_kinds import transports as _transports


def test_every_network_name_is_kept_sorted_once():
    assert _transports(["Socket", "Libfabric", "IB", "Libfabric"]) == ["IB", "Libfabric", "Socket"]


def test_names_stay_within_the_crd_bounds():
    many = [f"Net{i:02d}" for i in range(40)] + ["x" * 64, ""]
    kept = _transports(many)
    assert len(kept) == MAX_TRANSPORTS and all(0 < len(n) <= 63 for n in kept)
