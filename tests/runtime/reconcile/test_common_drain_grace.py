"""The pod-drain grace every tearing-down finalizer waits, named once in ``reconcile.common``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nvcre.runtime.clock import Clock
from nvcre.runtime.reconcile.common import past_drain_grace
from nvcre.runtime.reconcile.context import Context, Settings

START = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


class _At(Clock):
    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def now(self) -> datetime:
        return self.moment


def _ctx(after: float, grace: float = 300.0) -> Context:
    return Context(kube=None, stores={}, clock=_At(START + timedelta(seconds=after)), settings=Settings(pod_drain_grace=grace))  # type: ignore[arg-type]


@pytest.mark.parametrize(("after", "expected"), [(0.0, None), (299.9, None), (300.0, 300.0), (451.5, 451.5)])
def test_the_grace_runs_until_its_end_then_says_how_long_it_waited(after: float, expected: float | None) -> None:
    assert past_drain_grace(_ctx(after), START) == expected


def test_an_unknown_start_is_no_wait_yet() -> None:
    assert past_drain_grace(_ctx(10_000.0), None) is None
    assert past_drain_grace(_ctx(10_000.0, grace=0.0), None) == 0.0
