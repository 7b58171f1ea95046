"""Hostile and malformed input: refused with exit 2, a field path and nothing on stdout, in bounded time.

Every input is generated here and fed to ``nvcrectl`` in a child process whose address space
is capped (``resource.RLIMIT_AS``) and whose wall time is bounded; the child reports its peak
resident memory, which must stay under ``MAX_RSS_MB``. Each case is one that used to hang,
eat gigabytes, print a traceback, exit 1, or pass validation and then fail to render.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FACTS = REPO / "tests" / "fixtures" / "facts"

#: Generous for a shared two-core machine; a well-behaved refusal takes about a second.
MAX_SECONDS = 30.0
MAX_RSS_MB = 500
ADDRESS_SPACE_BYTES = 3 * 1024**3

# Runs the CLI under an address-space cap and writes its peak RSS (KiB) to the file in argv[1].
# The peak is the process's own memory map's high-water mark (VmHWM), not getrusage's ru_maxrss:
# that one keeps, across exec, the peak of the memory the child was forked from, which is the
# test runner's own (a long serial run grows past the limit, and every child then "used" it).
_CHILD = textwrap.dedent(
    """
    import atexit, resource, sys
    cap = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    report = sys.argv[1]

    def peak_kib():
        with open("/proc/self/status") as status:
            return next(line.split()[1] for line in status if line.startswith("VmHWM:"))

    atexit.register(lambda: open(report, "w").write(peak_kib()))
    sys.argv = ["nvcrectl", *sys.argv[3:]]
    from nvcre.cli.main import run
    run()
    """
)


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str
    seconds: float
    rss_mb: float


def nvcrectl(tmp_path: Path, *args: str, stdin: str | None = None) -> Outcome:
    report = tmp_path / "rss.txt"
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, str(report), str(ADDRESS_SPACE_BYTES), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=MAX_SECONDS * 2,
        check=False,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    seconds = time.monotonic() - start
    rss = int(report.read_text()) / 1024 if report.exists() else float("nan")
    return Outcome(result.returncode, result.stdout, result.stderr, seconds, rss)


def refused(outcome: Outcome, *fragments: str) -> None:
    """Exit 2, nothing on stdout, every fragment on stderr, one-line diagnostics, within bounds."""
    assert "Traceback" not in outcome.stderr, outcome.stderr[-3000:]
    assert outcome.code == 2, outcome.stderr[-3000:]
    assert outcome.stdout == ""
    for fragment in fragments:
        assert fragment in outcome.stderr, outcome.stderr[-3000:]
    lines = outcome.stderr.splitlines()
    assert lines and lines[-1].endswith("nothing was written"), lines[-3:]
    assert all(line.endswith("]") for line in lines[:-1]), lines[:5]
    bounded(outcome)


def bounded(outcome: Outcome) -> None:
    assert outcome.seconds < MAX_SECONDS, f"took {outcome.seconds:.1f}s"
    assert outcome.rss_mb < MAX_RSS_MB, f"peak RSS {outcome.rss_mb:.0f} MB"


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def certification(categories: list[str], extra: str = "", name: str = "hostile") -> str:
    body = "".join(f"  - {c}\n" for c in categories)
    return (
        "apiVersion: nvcre.nvidia.com/v1alpha1\nkind: Certification\n"
        f"metadata:\n  name: {name}\nspec:\n  target: {{}}\n{extra}  categories:\n{body}"
    )


def workloadrun(extra: str) -> str:
    return (
        "apiVersion: nvcre.nvidia.com/v1alpha1\nkind: WorkloadRun\nmetadata:\n  name: hostile\nspec:\n"
        "  image: nvcr.io/nvidia/pytorch:25.01-py3\n  numNodes: 1\n  framework:\n    exec:\n      command: [sh, -c, 'true']\n" + extra
    )


CATEGORY = "{domain: communication, variant: nccl-all-reduce, options: {nodesPerJob: %d}}"
RENDER = ("--platform", "onprem", "--gpu-arch", "h100")


# --------------------------------------------------------------------------- rule cost


@pytest.mark.parametrize("count", [24, 64])
def test_a_category_without_variant_among_many_is_refused_quickly(tmp_path: Path, count: int) -> None:
    cats = ["{domain: communication}"] + [CATEGORY % (i + 1) for i in range(count - 1)]
    doc = write(tmp_path, "c.yaml", certification(cats))
    refused(nvcrectl(tmp_path, "certification", "validate", doc), "spec.categories[0].variant: Required value")
    refused(nvcrectl(tmp_path, "certification", "render", doc, *RENDER), "spec.categories[0].variant")


def test_ten_thousand_categories_are_refused_by_size_before_any_rule(tmp_path: Path) -> None:
    doc = write(tmp_path, "c.yaml", certification([CATEGORY % (i + 1) for i in range(10_000)]))
    refused(nvcrectl(tmp_path, "certification", "validate", doc), "spec.categories: Too many: 10000: must have at most 64 items")


# --------------------------------------------------------------------------- sizes


def test_a_fifty_megabyte_document_is_refused_unread(tmp_path: Path) -> None:
    padding = "  # " + "x" * 1000 + "\n"
    doc = write(tmp_path, "big.yaml", certification([CATEGORY % 1]) + padding * 50_000)
    refused(nvcrectl(tmp_path, "certification", "validate", doc), "[DocumentTooLarge]")


def _alias_bomb(levels: int, width: int) -> str:
    text = f"a0: &a0 [{', '.join(['x'] * width)}]\n"
    for level in range(1, levels):
        text += f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * width)}]\n"
    return text


def test_an_alias_bomb_just_under_the_old_cap_is_refused(tmp_path: Path) -> None:
    # 11^6: about 1.8 million values once expanded, just under the two million once accepted.
    bomb = textwrap.indent(_alias_bomb(6, 11), "    ")
    doc = write(tmp_path, "bomb.yaml", certification([CATEGORY % 1], extra="  extra:\n" + bomb))
    refused(nvcrectl(tmp_path, "certification", "validate", doc), "[YAMLTooLarge]")


def test_an_alias_bomb_in_facts_is_refused(tmp_path: Path) -> None:
    # 14^6: about 7.5 million values once expanded.
    bomb = "kind: Node\napiVersion: v1\nmetadata:\n  name: n\n  annotations: {}\nspec:\n" + textwrap.indent(_alias_bomb(6, 14), "  ")
    facts = write(tmp_path, "facts.yaml", bomb)
    refused(nvcrectl(tmp_path, "cluster", "info", "--facts", facts), "[FactsTooLarge]")


def test_a_huge_facts_file_is_refused_unread(tmp_path: Path) -> None:
    node = "---\nkind: Node\napiVersion: v1\nmetadata:\n  name: n%d\n  annotations: {a: '" + "x" * 2000 + "'}\n"
    facts = write(tmp_path, "facts.yaml", "".join(node % i for i in range(9000)))
    refused(nvcrectl(tmp_path, "cluster", "info", "--facts", facts), "[FactsTooLarge]")


# --------------------------------------------------------------------------- numbers in facts


def _facts_with_gpu(quantity: str) -> str:
    text = (FACTS / "kind-mokka-h100.yaml").read_text(encoding="utf-8")
    assert "nvidia.com/gpu: " in text
    return text.replace("nvidia.com/gpu: ", f"nvidia.com/gpu: {quantity} #", 1)


@pytest.mark.parametrize(
    ("quantity", "message"),
    [
        ('"1e999999999"', "out of range: the exponent may be at most 40"),
        ("9" * 5000, "is out of range: numbers in Kubernetes objects are 64-bit"),
        ('"' + "9" * 30 + '"', "out of range: a quantity is at most 2^63-1"),
    ],
)
def test_absurd_quantities_in_facts_are_refused_with_their_path(tmp_path: Path, quantity: str, message: str) -> None:
    facts = write(tmp_path, "facts.yaml", _facts_with_gpu(quantity))
    for args in (("cluster", "info", "--facts", facts), ("certification", "render", "examples/certification.yaml", "--facts", facts)):
        refused(nvcrectl(tmp_path, *args), "status.allocatable.nvidia.com/gpu", message)


def test_a_5000_digit_integer_in_json_facts_is_refused_with_its_path(tmp_path: Path) -> None:
    node = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n"}, "status": {"capacity": {"cpu": 1}}}
    facts = write(tmp_path, "facts.json", json.dumps(node).replace('"cpu": 1', '"cpu": ' + "7" * 5000))
    refused(nvcrectl(tmp_path, "cluster", "info", "--facts", facts), "status.capacity.cpu", "out of range")


# --------------------------------------------------------------------------- values JSON cannot hold


@pytest.mark.parametrize("command", ["validate", "render"])
def test_an_integer_past_64_bits_in_an_unknown_field(tmp_path: Path, command: str) -> None:
    doc = write(tmp_path, "c.yaml", certification([CATEGORY % 1], extra=f"  futureField: {2**63}\n"))
    args = ("certification", command, doc) + (RENDER if command == "render" else ())
    refused(nvcrectl(tmp_path, *args), "spec.futureField: integer is out of range", "[ValueOutOfRange]")


def test_a_yaml_date_in_a_string_list(tmp_path: Path) -> None:
    doc = write(tmp_path, "c.yaml", certification([CATEGORY % 1]).replace("  target: {}\n", "  target: {nodeNames: [2026-01-01]}\n"))
    refused(nvcrectl(tmp_path, "certification", "validate", doc), "spec.target.nodeNames[0]: a YAML date")


@pytest.mark.parametrize("depth", [100, 900, 3000])
def test_deep_nesting_is_refused_alike_by_validate_and_render(tmp_path: Path, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    doc = write(tmp_path, "w.yaml", workloadrun(f"  volumes:\n  - name: deep\n    emptyDir: {{x: {nested}}}\n"))
    validate = nvcrectl(tmp_path, "certification", "validate", doc)
    render = nvcrectl(tmp_path, "workloadrun", "render", doc, *RENDER)
    refused(validate, "[DocumentTooDeep]")
    refused(render, "[DocumentTooDeep]")
    assert validate.stderr == render.stderr


@pytest.mark.parametrize(
    ("yaml_value", "message"),
    [
        ("!!binary aGVsbG8=", "!!binary data is not a JSON value"),
        ("!!set {a, b}", "a YAML !!set is not a JSON value"),
        ("2026-01-01", "a YAML date or timestamp is not a JSON value"),
        ("2026-01-01T10:00:00Z", "a YAML date or timestamp is not a JSON value"),
        (".inf", "must be a finite number"),
    ],
)
@pytest.mark.parametrize("where", ["volumes", "overrides"])
def test_non_json_values_in_free_form_workloadrun_parts(tmp_path: Path, yaml_value: str, message: str, where: str) -> None:
    if where == "volumes":
        extra, path = f"  volumes:\n  - name: v\n    hostPath:\n      path: {yaml_value}\n", "spec.volumes[0].hostPath.path"
    else:
        extra = f"  overrides:\n  - name: o\n    jobTemplatePatch:\n      spec:\n        x: {yaml_value}\n"
        path = "spec.overrides[0].jobTemplatePatch.spec.x"
    doc = write(tmp_path, "w.yaml", workloadrun(extra))
    refused(nvcrectl(tmp_path, "certification", "validate", doc), f"{path}: {message}")
    refused(nvcrectl(tmp_path, "workloadrun", "render", doc, *RENDER), f"{path}: {message}")


# --------------------------------------------------------------------------- gaps against the API server


def test_annotations_over_256_kib(tmp_path: Path) -> None:
    text = certification([CATEGORY % 1]).replace(
        "  name: hostile\n", "  name: hostile\n  annotations:\n    note: '" + "x" * 262_144 + "'\n"
    )
    refused(nvcrectl(tmp_path, "certification", "validate", write(tmp_path, "c.yaml", text)), "metadata.annotations: Too long")


@pytest.mark.parametrize("host", ["dcgm.svc:0", "dcgm.svc:65536", "dcgm.svc:00080", "dcgm.svc:99999"])
def test_dcgm_host_ports_outside_1_to_65535(tmp_path: Path, host: str) -> None:
    doc = write(tmp_path, "c.yaml", certification([CATEGORY % 1], extra=f"  dcgmHost: '{host}'\n"))
    refused(nvcrectl(tmp_path, "certification", "validate", doc), "spec.dcgmHost: should match")


def test_dcgm_host_ports_inside_the_range_pass(tmp_path: Path) -> None:
    for host in ("dcgm.svc:1", "dcgm.svc:5555", "dcgm.svc:65535", "10.0.0.7"):
        doc = write(tmp_path, "c.yaml", certification([CATEGORY % 1], extra=f"  dcgmHost: '{host}'\n"))
        outcome = nvcrectl(tmp_path, "certification", "validate", doc)
        assert outcome.code == 0, (host, outcome.stderr)


@pytest.mark.parametrize(
    "repo",
    [
        "https://",
        "ssh://",
        "https:///path.git",
        "ssh://-oProxyCommand%3Dtouch%20x/repo.git",
        "ssh://-oStrictHostKeyChecking/r.git",
        "ssh://git@-oProxyCommand/r.git",
        "https://@host/r.git",
    ],
)
def test_source_repo_without_a_host_or_with_an_option_for_ssh(tmp_path: Path, repo: str) -> None:
    doc = write(tmp_path, "c.yaml", certification([CATEGORY % 1], extra=f"  sourceRepo: '{repo}'\n"))
    refused(nvcrectl(tmp_path, "certification", "validate", doc), "spec.sourceRepo: sourceRepo must name a host")


def test_source_repo_with_a_host_passes(tmp_path: Path) -> None:
    for repo in (
        "https://github.com/NVIDIA/Megatron-LM.git",
        "ssh://git@git.example.com/mirrors/m.git",
        "https://user:token@git.example.com/r.git",
    ):
        doc = write(tmp_path, "c.yaml", certification([CATEGORY % 1], extra=f"  sourceRepo: '{repo}'\n"))
        outcome = nvcrectl(tmp_path, "certification", "validate", doc)
        assert outcome.code == 0, (repo, outcome.stderr)


@pytest.mark.parametrize("key", ["team.nvcre.nvidia.com/owner", "a.b.nvcre.nvidia.com/x", "nvcre.nvidia.com/x"])
def test_label_keys_under_any_nvcre_subdomain_are_reserved(tmp_path: Path, key: str) -> None:
    doc = write(tmp_path, "c.yaml", certification([CATEGORY % 1], extra=f"  workloadMetadata:\n    labels:\n      {key}: v\n"))
    refused(nvcrectl(tmp_path, "certification", "validate", doc), "spec.workloadMetadata.labels: label keys must not be")
    gang = write(
        tmp_path,
        "g.yaml",
        certification([CATEGORY % 1], extra=f"  gangScheduler:\n    schedulerName: kai-scheduler\n    queueLabelKey: {key}\n"),
    )
    refused(nvcrectl(tmp_path, "certification", "validate", gang), "spec.gangScheduler.queueLabelKey: queueLabelKey must not be")


@pytest.mark.parametrize(("value", "kind"), [("3", "integer"), ("true", "boolean"), ("{algo: ring}", "object"), ("[1, 2]", "array")])
def test_config_inline_values_must_be_strings(tmp_path: Path, value: str, kind: str) -> None:
    doc = write(tmp_path, "w.yaml", workloadrun(f"  config:\n    inline:\n      file.txt: {value}\n"))
    refused(nvcrectl(tmp_path, "certification", "validate", doc), f"spec.config.inline.file.txt: must be of type string, got {kind}")
    refused(nvcrectl(tmp_path, "workloadrun", "render", doc, *RENDER), "spec.config.inline.file.txt")


def test_keys_with_a_newline_stay_on_one_line(tmp_path: Path) -> None:
    unknown = write(tmp_path, "u.yaml", certification([CATEGORY % 1], extra='  "bad\\nfield": 1\n'))
    refused(nvcrectl(tmp_path, "certification", "validate", unknown), 'spec.bad\\nfield: unknown field "bad\\nfield"')
    selector = write(
        tmp_path, "s.yaml", certification([CATEGORY % 1]).replace("  target: {}\n", '  target: {nodeSelector: {"a\\nb": 1}}\n')
    )
    refused(nvcrectl(tmp_path, "certification", "validate", selector), "spec.target.nodeSelector.a\\nb: must be of type string")
    labels = write(tmp_path, "l.yaml", certification([CATEGORY % 1], extra='  workloadMetadata:\n    labels:\n      "bad\\nkey": v\n'))
    refused(nvcrectl(tmp_path, "certification", "validate", labels), "spec.workloadMetadata.labels: label keys must be valid")
    meta = write(
        tmp_path, "m.yaml", certification([CATEGORY % 1]).replace("  name: hostile\n", '  name: hostile\n  labels: {"x\\ny": v}\n')
    )
    refused(nvcrectl(tmp_path, "certification", "validate", meta), "'x\\ny' is not a valid key")


# --------------------------------------------------------------------------- the CLI's own paths


def test_render_reads_facts_from_stdin(tmp_path: Path) -> None:
    facts = (FACTS / "kind-mokka-h100.yaml").read_text(encoding="utf-8")
    outcome = nvcrectl(tmp_path, "certification", "render", "examples/certification.yaml", "--facts", "-", "-o", "json", stdin=facts)
    assert outcome.code == 0, outcome.stderr
    workflows = json.loads(outcome.stdout)
    assert len(workflows) == 4
    assert '"platform":{"source":"detected"' in outcome.stdout.replace(" ", "") or "detected" in outcome.stdout
    bounded(outcome)


def test_cluster_info_errors_take_the_common_path(tmp_path: Path) -> None:
    facts = write(tmp_path, "facts.yaml", "kind: Node\napiVersion: v1\nmetadata: {name: a}\nspec: {taints: [7]}\n")
    refused(nvcrectl(tmp_path, "cluster", "info", "--facts", facts), "spec.taints[0]: expected a mapping")
    refused(nvcrectl(tmp_path, "cluster", "info", "--facts", str(tmp_path / "missing.yaml")), "[FactsUnreadable]")
