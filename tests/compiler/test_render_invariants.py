"""Render-level invariants the brief promises, checked on whole Certifications."""

from __future__ import annotations

import copy

from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.render import render_certification


def _cert(**spec) -> dict:
    categories = [{"domain": k.split("/")[0], "variant": k.split("/")[1], "options": {"nodesPerJob": 8}} for k in load_catalog().keys()]
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "inv"},
        "spec": {"target": {}, "categories": categories, **spec},
    }


def _render(doc: dict, platform: str = "onprem", arch: str = "h100") -> list[dict]:
    return render_certification(doc, platform=platform, gpu_arch=arch).workflows


def test_empty_env_renders_byte_identically_to_no_env() -> None:
    doc = _cert(env=[])
    for category in doc["spec"]["categories"]:
        category["options"]["env"] = []
    assert dump_yaml_stream(_render(doc)) == dump_yaml_stream(_render(_cert()))


def _without_gang(value, key: str):
    """``value`` minus what a gang rewrite may add: scheduler names, the queue label, the intent."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in ("schedulerName", key, "gangScheduler", "workloadMetadata"):
                continue
            v = _without_gang(v, key)
            if v != {} or k not in ("labels", "metadata"):
                out[k] = v
        return out
    if isinstance(value, list):
        return [_without_gang(v, key) for v in value]
    return value


def test_a_non_kai_gang_scheduler_changes_only_scheduler_name_queue_labels_and_intent() -> None:
    plain = _render(_cert())
    gang = _render(_cert(gangScheduler={"schedulerName": "runai-scheduler", "queue": "team-a", "queueLabelKey": "runai/queue"}))
    assert plain != gang
    for before, after in zip(plain, gang):
        assert after["spec"]["gangScheduler"] == {"schedulerName": "runai-scheduler", "queue": "team-a", "queueLabelKey": "runai/queue"}
        assert _without_gang(after, "runai/queue") == _without_gang(before, "runai/queue")


def test_env_name_set_by_the_user_wins_over_enable_mnnvl() -> None:
    doc = _cert(enableMNNVL=True, env=[{"name": "NCCL_MNNVL_ENABLE", "value": "0"}])
    for workflow in _render(doc, arch="gb200"):
        trainer = workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]
        args, env = trainer.get("args") or [], trainer.get("env") or []
        if "-x" in args:
            assert "NCCL_MNNVL_ENABLE=0" in args and "NCCL_MNNVL_ENABLE=1" not in args
        else:
            assert {"name": "NCCL_MNNVL_ENABLE", "value": "0"} in env


def test_rendering_does_not_change_the_input_document() -> None:
    doc = _cert(
        env=[{"name": "A", "value": "1"}],
        workloadMetadata={"labels": {"team": "x"}},
        gangScheduler={"schedulerName": "kai-scheduler"},
        imagePullSecrets=[{"name": "regcred"}],
    )
    before = copy.deepcopy(doc)
    _render(doc, platform="aws", arch="gb200")
    assert doc == before
