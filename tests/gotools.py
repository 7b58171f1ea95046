"""The Go tools some tests run (helm, prometheus and promtool, cosign), found or built once.

Each is built from its Go module into the control-plane cache by ``testing/gobuild/build.py``
(``make go-tools``). A test asking for one gets its path; when it is not built yet and Go is
there, it is built now (the build's output shown, not captured); without Go the test skips with
the command that builds it, except under ``CI=true``, where a missing tool is an error.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from nvcre.testing.binaries import build_module


def unavailable(message: str) -> None:
    """Skip with ``message``, or fail under ``CI=true`` (CI must never pass by skipping)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI=true, so this is an error, not a skip)", pytrace=False)
    pytest.skip(message)


def go_tool(request: pytest.FixtureRequest, name: str, binary: str | None = None) -> Path:
    """The path of ``binary`` (default: the tool's first) of the Go tool ``name``."""
    build = build_module()
    if build.tool_missing(name):
        if build.find_go() is None:
            unavailable(
                f"{name} is not built and there is no Go toolchain to build it "
                f"(`python -m nvcre.testing.gobuild.build --tools-only --tools {name}`)"
            )
        capture = request.config.pluginmanager.getplugin("capturemanager")
        try:
            with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
                build.build_tool(name)
        except build.BuildError as exc:
            pytest.fail(f"building {name} failed: {exc}", pytrace=False)
    return Path(build.tool_binary_path(name, binary))
