"""Shared pytest set-up: the golden update switch and the control-plane fixture plugin."""

from __future__ import annotations

# cel-python raises the interpreter's recursion limit when it first parses; do it once up front so
# property tests do not see the limit change under them (hypothesis warns when it does).
import celpy  # noqa: F401,E402
import pytest

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


#: A test that takes longer than this on its own belongs in the full lane: mark it ``slow``.
SLOW_SECONDS = 5.0
_over_budget: list[tuple[str, float]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.duration > SLOW_SECONDS and "slow" not in report.keywords:
        _over_budget.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name the unmarked tests over the budget, so the quick lane stays quick (a note, not a failure:
    timings vary with the machine)."""
    markexpr = terminalreporter.config.getoption("markexpr", "") or ""
    if "not slow" not in markexpr or not _over_budget:
        return
    terminalreporter.write_sep("-", f"tests over {SLOW_SECONDS:.0f} s without the slow marker")
    for nodeid, seconds in sorted(_over_budget, key=lambda item: -item[1]):
        terminalreporter.write_line(f"{seconds:6.1f} s  {nodeid}")
