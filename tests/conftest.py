"""Shared pytest set-up: the golden update switch and the control-plane fixture plugin."""

from __future__ import annotations

import pytest

# cel-python raises the interpreter's recursion limit when it first parses; do it once up front so
# property tests do not see the limit change under them (hypothesis warns when it does).
import celpy  # noqa: F401,E402

celpy.Environment().compile("true")

pytest_plugins = ["nvcre.testing.pytest_plugin"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden files from the current output instead of comparing (review every change)",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))
