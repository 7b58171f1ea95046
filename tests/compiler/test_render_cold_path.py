"""What a cold render loads and reads: the plain checks of the package's files, the shipped
detection tables, the escape class of the YAML writer, and the modules it never imports."""

from __future__ import annotations

import copy
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from nvcre.compiler import source_check, source_models, yaml_snapshot
from nvcre.compiler.detect.tables import _freeze, table, tables_folder
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.emit_writer import _NEEDS_ESCAPE
from nvcre.compiler.yamlio import INTERNAL_LIMITS, load_documents, load_file

REPO = Path(__file__).resolve().parents[2]
ENTRIES = sorted((REPO / "catalog").glob("*/*/entry.yaml"))
OVERLAYS = sorted(p for p in (REPO / "platforms").glob("*/*.yaml") if p.parent.name != "detection")
DEFAULTS = REPO / "catalog/_lib/gpu-defaults.yaml"
FRAMEWORKS = REPO / "catalog/_lib/workloadrun/entries.yaml"


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (1, 1.0 and True told apart)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _model_or_none(check: Any, data: Any) -> Any:
    try:
        return check(data)
    except CompileError:
        return None


def _entry_docs() -> list[Any]:
    return [load_file(p)[0] for p in ENTRIES] + list(load_file(FRAMEWORKS)[0]["entries"])


def test_every_entry_defaults_and_overlay_file_is_read_plainly_and_as_the_models_read_it() -> None:
    for data in _entry_docs():
        plain = source_check.catalog_entry(data)
        assert plain is not None and _same(plain, source_models.checked_entry(data, "x: "))
    defaults = load_file(DEFAULTS)[0]
    plain_defaults = source_check.gpu_defaults(defaults)
    assert plain_defaults is not None and _same(plain_defaults, source_models.checked_defaults(defaults, "x: "))
    assert len(OVERLAYS) > 60
    for path in OVERLAYS:
        data = load_file(path)[0]
        plain_overlay = source_check.overlay(data, "src")
        assert plain_overlay is not None, path
        assert _same(plain_overlay, source_models.checked_overlay({**data, "source": "src"}, "x: ")), path


#: Values that a damaged file may hold where another belongs: each of the plain check's types, the
#: conversions the models make ("2" and 2.0 to 2, 1 to True), and shapes of the wrong kind.
_SUBSTITUTES: list[Any] = [
    None,
    "",
    "x",
    "2",
    "mpi",
    "bandwidth",
    0,
    1,
    2,
    -1,
    2.0,
    True,
    False,
    [],
    ["a"],
    [1],
    {},
    {"in": ["a"]},
    {"x": 1},
]


def _damaged(document: Any, rng: random.Random) -> Any:
    """A copy of ``document`` with one value replaced, one key dropped, or one key added, somewhere."""
    doc = copy.deepcopy(document)
    node = doc
    while True:
        children = [k for k, v in node.items() if isinstance(v, dict) and v] if isinstance(node, dict) else []
        if not children or rng.random() < 0.4:
            break
        node = node[rng.choice(children)]
    if not isinstance(node, dict) or not node:
        return doc
    action = rng.random()
    key = rng.choice(list(node))
    if action < 0.6:
        node[key] = rng.choice(_SUBSTITUTES)
    elif action < 0.8:
        del node[key]
    else:
        node[rng.choice(["extra", "in_", "timeout_per_job", "gpuArchitecture", "allArchitectures", "tp", "source"])] = rng.choice(
            _SUBSTITUTES
        )
    return doc


@pytest.mark.parametrize("seed", range(4))
def test_damaged_files_are_accepted_plainly_only_as_the_models_accept_them(seed: int) -> None:
    rng = random.Random(seed)
    entries, overlays = _entry_docs(), [load_file(p)[0] for p in OVERLAYS]
    defaults = load_file(DEFAULTS)[0]
    declined = 0
    for _ in range(400):
        entry, overlay, table_doc = _damaged(rng.choice(entries), rng), _damaged(rng.choice(overlays), rng), _damaged(defaults, rng)
        for plain, by_model in (
            (source_check.catalog_entry(entry), _model_or_none(lambda d: source_models.checked_entry(d, ""), entry)),
            (
                source_check.overlay(overlay, "s"),
                _model_or_none(lambda d: source_models.checked_overlay({**d, "source": "s"}, ""), overlay),
            ),
            (source_check.gpu_defaults(table_doc), _model_or_none(lambda d: source_models.checked_defaults(d, ""), table_doc)),
        ):
            if plain is None:
                declined += 1
                continue
            assert by_model is not None, "the plain check accepted what the models refuse"
            assert _same(plain, by_model)
    assert declined > 100  # the damage reaches the checks: many copies are refused or left to the models


def test_a_damaged_overlay_still_gets_the_models_words() -> None:
    from nvcre.compiler.overlays import parse_overlay

    with pytest.raises(CompileError) as raised:
        parse_overlay({"name": "Bad_Name", "reason": "", "when": {"platform": {"in": ["aws"]}}, "patches": 3}, "p/o.yaml", "p/o.yaml: ")
    paths = sorted(d.path for d in raised.value.diagnostics)
    assert paths == ["p/o.yaml: name", "p/o.yaml: patches", "p/o.yaml: reason", "p/o.yaml: when"]


def test_detection_tables_read_as_the_yaml_default_version_and_ship_parsed() -> None:
    files = sorted(tables_folder().glob("*.yaml"))
    assert files == yaml_snapshot.default_version_files() and len(files) >= 5
    for path in files:
        text = path.read_text(encoding="utf-8")
        shipped = yaml_snapshot.lookup(text, None)
        assert shipped is not None and _same(shipped, load_documents(text, str(path), limits=INTERNAL_LIMITS, version=None, snapshot=False))
        expected = _freeze(YAML(typ="safe").load(text))  # how the tables were always read
        assert _same(_thaw(table(path.stem)), _thaw(expected))


def _thaw(value: Any) -> Any:
    if hasattr(value, "items"):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


def test_the_double_quote_escape_class_is_the_complement_of_yaml_s_printable_set() -> None:
    printable = re.compile("[\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
    special = set('"\\\u2028\u2029\ufeff')
    for code in range(0x110000):
        char = chr(code)
        expected = char in special or printable.fullmatch(char) is None
        assert (_NEEDS_ESCAPE.fullmatch(char) is not None) == expected, hex(code)


_PROBE = """
import sys
from nvcre.cli.main import run
sys.argv = ["nvcrectl", "certification", "render", sys.argv[1], "--platform", "aws", "--gpu-arch", "h100"]
try:
    run()
finally:
    loaded = sorted(sys.modules)
    sys.stderr.write("\\n".join(loaded))
"""


def test_a_cold_render_loads_no_models_jsonpatch_planners_or_package_resource_readers(tmp_path: Path) -> None:
    document = REPO / "examples/certification.yaml"
    result = subprocess.run([sys.executable, "-c", _PROBE, str(document)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.startswith("apiVersion")
    loaded = set(result.stderr.split("\n"))
    unwanted = {
        "pydantic",
        "jsonpatch",
        "nvcre.compiler.diagnose.model",
        "nvcre.compiler.source_models",
        "importlib.resources",
        "celpy",
        "typer",
    }
    assert not unwanted & loaded, sorted(unwanted & loaded)
