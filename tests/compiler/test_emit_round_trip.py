"""YAML -> model -> YAML is byte-identical for the examples and for every rendered Workflow."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcre.compiler.api import parse_document
from nvcre.compiler.emit import dump_yaml, dump_yaml_stream
from nvcre.compiler.yamlio import load_documents, load_file

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
RENDERED = sorted(p for suite in ("render", "workloadrun") for p in (REPO / "golden" / suite).glob("*/expected.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_round_trip(path: Path) -> None:
    for document in load_file(path):
        model, problems = parse_document(document)
        assert model is not None, [d.render() for d in problems]
        assert dump_yaml(model.to_dict()) == dump_yaml(document)


@pytest.mark.parametrize("path", RENDERED, ids=[f"{p.parent.parent.name}/{p.parent.name}" for p in RENDERED])
def test_rendered_workflows_are_valid_and_round_trip(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    workflows = load_documents(text, str(path))
    models = []
    for workflow in workflows:
        model, problems = parse_document(workflow)
        assert model is not None, [d.render() for d in problems]
        models.append(model.to_dict())
    assert dump_yaml_stream(models) == text
