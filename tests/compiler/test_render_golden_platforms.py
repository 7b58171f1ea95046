"""Golden projections, one case per platform x GPU pair that an overlay names, every category.

``golden/platforms/<platform>-<arch>/`` holds ``certification.yaml`` (all eight categories) and
``flags.yaml``; ``expected.yaml`` is the projection (``tests/projection.py``) of the render: the
images, command lines, env, resources, tolerations, claims and mounts each overlay changes, per
category. A test also checks that every pair an overlay names has a case.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.detect import platform_names
from nvcre.compiler.emit import dump_yaml
from nvcre.compiler.overlays import load_overlays
from nvcre.compiler.render import render_certification
from nvcre.compiler.yamlio import load_documents, load_file
from tests.goldenharness import GOLDEN, cases, check
from tests.projection import project

CASES = cases("platforms")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_platform_projection(case: Path, update_golden: bool) -> None:
    flags = load_file(case / "flags.yaml")[0]
    rendered = render_certification(
        load_file(case / "certification.yaml")[0], platform=flags["platform"], gpu_arch=flags["gpuArch"], check_purity=True
    )
    text = dump_yaml({"workflows": [project(w) for w in rendered.workflows]})
    check(case / "expected.yaml", text, update_golden, parse=lambda t: load_documents(t))


def test_every_pair_an_overlay_names_has_a_case() -> None:
    overlays = load_overlays().overlays
    archs = sorted(load_catalog().gpu_defaults.architectures)
    named = {
        f"{platform}-{arch}"
        for platform, arch in itertools.product(platform_names(), archs)
        if any(
            o.when.platform is not None
            and o.when.platform.matches(platform)
            and (o.when.gpu_architecture is None or o.when.gpu_architecture.matches(arch))
            for o in overlays
        )
    }
    assert named <= {c.name for c in CASES}, sorted(named - {c.name for c in CASES})
    assert (GOLDEN / "platforms").is_dir()
