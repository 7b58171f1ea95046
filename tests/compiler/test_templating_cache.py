"""Templates compile once and rendered texts parse once, yet every caller gets data it may change.

The in-process memo (rendered text -> parsed document) and the on-disk cache of compiled
templates must never change what a render produces; ``NVCRE_NO_CACHE=1`` turns the disk cache
off, and a cache folder other users could write to is refused.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import nvcre.compiler.templating as templating
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.templating import TemplateSet, bytecode_cache_dir, plain_copy


@pytest.fixture
def roots(tmp_path: Path) -> Path:
    (tmp_path / "doc.yaml.j2").write_text("spec:\n  name: {{ name }}\n  items: {{ items }}\n  nested: {a: [1, {b: 2}]}\n")
    (tmp_path / "two.yaml.j2").write_text("a: 1\n---\nb: 2\n")
    return tmp_path


def test_every_render_returns_a_private_copy(roots: Path) -> None:
    templates = TemplateSet(roots)
    first = templates.render_yaml("doc.yaml.j2", {"name": "x", "items": [1, 2]}, "here")
    first["spec"]["nested"]["a"][1]["b"] = "changed"
    first["spec"]["items"].append(3)
    second = templates.render_yaml("doc.yaml.j2", {"name": "x", "items": [1, 2]}, "here")
    assert second == {"spec": {"name": "x", "items": [1, 2], "nested": {"a": [1, {"b": 2}]}}}


def test_a_rendered_text_is_parsed_once(roots: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = templating.load_documents

    def counting(text: str, source: str = "<input>") -> list:
        calls.append(text)
        return real(text, source)

    monkeypatch.setattr(templating, "load_documents", counting)
    monkeypatch.setattr(templating, "_parsed", {})
    templates = TemplateSet(roots)
    for _ in range(3):
        templates.render_yaml("doc.yaml.j2", {"name": "same", "items": []}, "here")
    templates.render_yaml("doc.yaml.j2", {"name": "other", "items": []}, "here")
    assert len(calls) == 2


def test_the_parse_memo_stays_bounded(roots: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(templating, "_parsed", {})
    monkeypatch.setattr(templating, "_PARSED_LIMIT", 3)
    templates = TemplateSet(roots)
    for index in range(10):
        assert templates.render_yaml("doc.yaml.j2", {"name": f"n{index}", "items": []}, "here")["spec"]["name"] == f"n{index}"
        assert len(templating._parsed) <= 3
    monkeypatch.setattr(templating, "_PARSED_CHARS_LIMIT", 10)
    templates.render_yaml("doc.yaml.j2", {"name": "long", "items": []}, "here")
    assert len(templating._parsed) == 1


def test_a_render_is_memoised_by_template_and_plain_values(roots: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    templates = TemplateSet(roots)
    renders: list[str] = []
    real = templates._render

    def counting(name: str, values: dict, where: str) -> str:
        renders.append(name)
        return real(name, values, where)

    monkeypatch.setattr(templates, "_render", counting)
    for _ in range(3):
        templates.render_yaml("doc.yaml.j2", {"name": "x", "items": [1]}, "here")
    assert len(renders) == 1
    # Values a template can tell apart are different keys: types, tuples against lists, order.
    variants = [{"name": "x", "items": (1,)}, {"name": "x", "items": [True]}, {"name": "x", "items": ["1"]}, {"items": [1], "name": "x"}]
    results = [templates.render_yaml("doc.yaml.j2", values, "here")["spec"]["items"] for values in variants]
    assert len(renders) == 5
    assert results == [[1], [True], ["1"], [1]]


class _Opaque:
    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:  # the same repr whatever the value: must never be a memo key
        return "_Opaque()"

    def __str__(self) -> str:
        return self.value


def test_values_that_are_not_plain_data_are_never_memoised(roots: Path) -> None:
    templates = TemplateSet(roots)
    first = templates.render_yaml("doc.yaml.j2", {"name": _Opaque("a").value, "items": []}, "here")
    assert first["spec"]["name"] == "a"
    assert templating._values_key("doc.yaml.j2", {"name": _Opaque("a"), "items": []}) is None
    assert templating._values_key("doc.yaml.j2", {"name": "a", "items": {1, 2}}) is None
    assert templating._values_key("doc.yaml.j2", {"name": "a", "items": [1, (2, {"k": None})]}) is not None


def test_errors_are_not_memoised_as_results(roots: Path) -> None:
    templates = TemplateSet(roots)
    for _ in range(2):
        with pytest.raises(CompileError) as caught:
            templates.render_yaml("two.yaml.j2", {}, "here")
        assert "rendered 2 documents" in caught.value.diagnostics[0].message


def test_plain_copy_shares_no_container() -> None:
    original = {"a": [1, {"b": [2, 3]}], "c": {"d": {}}, "e": "text"}
    copied = plain_copy(original)
    assert copied == original
    copied["a"][1]["b"].append(4)
    copied["c"]["d"]["x"] = 1
    assert original == {"a": [1, {"b": [2, 3]}], "c": {"d": {}}, "e": "text"}


def test_no_cache_switch_turns_the_disk_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("NVCRE_NO_CACHE", "1")
    assert bytecode_cache_dir("yaml") is None
    assert not (tmp_path / "nvcre").exists()
    monkeypatch.setenv("NVCRE_NO_CACHE", "0")
    folder = bytecode_cache_dir("yaml")
    assert folder is not None and folder.is_relative_to(tmp_path / "nvcre" / "templates")
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0


def test_a_folder_others_can_write_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("NVCRE_NO_CACHE", raising=False)
    folder = bytecode_cache_dir("script")
    assert folder is not None
    folder.chmod(0o777)
    assert bytecode_cache_dir("script") is None


def _render_in_fresh_process(env: dict[str, str]) -> str:
    code = (
        "import sys\n"
        "from nvcre.compiler.emit import dump_yaml_stream\n"
        "from nvcre.compiler.render import render_certification\n"
        "doc = {'apiVersion': 'nvcre.nvidia.com/v1alpha1', 'kind': 'Certification', 'metadata': {'name': 'c'},\n"
        "       'spec': {'target': {}, 'categories': [{'domain': 'communication', 'variant': 'nccl-all-reduce'},\n"
        "                                              {'domain': 'training', 'variant': 'nemotron5-8b'}]}}\n"
        "sys.stdout.write(dump_yaml_stream(render_certification(doc, platform='aws', gpu_arch='h100').workflows))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout


def test_output_is_the_same_with_a_cold_a_warm_and_no_disk_cache(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("NVCRE_NO_CACHE", None)
    cold = _render_in_fresh_process(env)
    cached = list((tmp_path / "nvcre" / "templates").rglob("*.cache"))
    assert cached, "compiled templates were not kept"
    warm = _render_in_fresh_process(env)
    without = _render_in_fresh_process({**env, "NVCRE_NO_CACHE": "1"})
    assert cold == warm == without
    assert "kind: Workflow" in cold
