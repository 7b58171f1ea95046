"""The API server, with the committed CRDs, admits and refuses the Gt/Lt node selectors as the offline checks do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conformance.test_nvcre_node_selector_gt_lt import _TARGET_PATH, ADMITTED, REFUSED, _documents


@pytest.mark.integration
@pytest.mark.parametrize("which", sorted(_TARGET_PATH))
def test_the_api_server_admits_and_refuses_the_same(server_refusal: Callable[[dict[str, Any]], set[str]], which: str) -> None:
    for requirement in ADMITTED:
        assert server_refusal(_documents(requirement)[which]) == set(), requirement
    for requirement in REFUSED:
        assert server_refusal(_documents(requirement)[which]) == {_TARGET_PATH[which] + ".values"}, requirement
