"""check_job refuses a Job name that is not exactly a DNS-1123 label (a trailing newline included)."""

from __future__ import annotations

import pytest

from nvcre.compiler.expand.context import expand_context
from nvcre.compiler.expand.job import check_job
from nvcre.compiler.unit import Unit
from tests.compiler.expand.test_job import G0, plan, workflow


def _problems(name: object) -> list[tuple[str, str]]:
    ctx = expand_context(workflow(), launch="single", plan=plan(G0), group=G0)
    _, found = check_job(Unit(category={}, workflow={"metadata": {"name": name}, "spec": {}}), ctx)
    return [(d.code, d.message) for d in found]


def test_a_valid_job_name_passes() -> None:
    assert _problems("cert-communication-nccl-a-21481-job") == []


@pytest.mark.parametrize("name", ["cert-x-job\n", "cert-x-job\nsecond-line", "Cert-x-job", "-cert-x", "cert_x", "", "a" * 36])
def test_anything_but_a_whole_dns_label_is_refused(name: str) -> None:
    assert _problems(name) == [("InvalidJobName", f"{name!r} is not a DNS-1123 label of at most 35 characters")]


def test_a_name_that_is_not_text_is_refused_not_a_crash() -> None:
    assert [code for code, _ in _problems(None)] == ["InvalidJobName"]
