"""The built-in LogProfiles: valid against the API model, RE2-clean, each example matching."""

from __future__ import annotations

import pytest
import re2

from nvcre.compiler.api.validate import validate
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.logprofiles import builtin_logprofiles, check_logprofile

NAMES = [
    "megatron-bridge",
    "megatron-deepspeed-training",
    "megatron-training",
    "nccl-bandwidth",
    "nccl-loopback",
    "nemo-automodel-training",
    "nemo-hf-automodel-training",
    "nemo1-training",
    "nemo2-training",
    "torchtitan-training",
]


def _named(name: str) -> dict:
    return next(p for p in builtin_logprofiles() if p["metadata"]["name"] == name)


def test_the_shipped_profiles_are_there() -> None:
    assert [p["metadata"]["name"] for p in builtin_logprofiles()] == NAMES


@pytest.mark.parametrize("profile", builtin_logprofiles(), ids=NAMES)
def test_profile_passes_the_api_validation(profile: dict) -> None:
    assert [d.render() for d in validate(profile)] == []


@pytest.mark.parametrize("profile", builtin_logprofiles(), ids=NAMES)
def test_every_pattern_is_re2_and_matches_its_example(profile: dict) -> None:
    for key, pattern in profile["spec"]["patterns"].items():
        compiled = re2.compile(pattern["regex"])
        assert compiled.search(pattern["example"]) is not None, key


def test_nccl_profiles_read_the_launcher_and_the_node() -> None:
    by_name = {p["metadata"]["name"]: p for p in builtin_logprofiles()}
    assert by_name["nccl-bandwidth"]["spec"]["workerStrategy"]["replicatedJobName"] == "launcher"
    assert by_name["nccl-loopback"]["spec"]["workerStrategy"]["replicatedJobName"] == "node"
    for name in ("nccl-bandwidth", "nccl-loopback"):
        transport = re2.compile(by_name[name]["spec"]["patterns"]["networkTransport"]["regex"])
        for line, expected in [
            ("n:1:1 [0] NCCL INFO Using network IB", "IB"),
            ("n:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0", "Socket"),
            ("n:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Libfabric/0/GDRDMA", "Libfabric"),
        ]:
            match = transport.search(line)
            assert match is not None and match.group("transport") == expected
        # probing a missing IB device is not a transport
        assert transport.search("n:1:1 [0] NCCL INFO NET/IB : No device found.") is None


def test_megatron_warmup_and_interval() -> None:
    by_name = {p["metadata"]["name"]: p["spec"] for p in builtin_logprofiles()}
    assert (by_name["megatron-training"]["warmupSteps"], by_name["megatron-training"]["logInterval"]) == (10, 10)
    assert (by_name["megatron-bridge"]["warmupSteps"], by_name["megatron-bridge"]["logInterval"]) == (5, 1)


def test_returned_profiles_are_copies() -> None:
    first = builtin_logprofiles()
    first[0]["spec"]["patterns"].clear()
    assert builtin_logprofiles()[0]["spec"]["patterns"]


def test_a_broken_profile_is_reported_with_its_path() -> None:
    profile = _named("nccl-bandwidth")
    profile["spec"]["patterns"]["bandwidthResult"]["regex"] = "(?=lookahead)"
    problems = check_logprofile(profile, "logprofiles/x.yaml")
    assert [p.code for p in problems] == ["LogProfileRegex"]
    assert problems[0].path == "logprofiles/x.yaml: spec.patterns.bandwidthResult.regex"
    profile = _named("nccl-bandwidth")
    profile["spec"]["patterns"]["bandwidthResult"]["example"] = "no digits here"
    assert [p.code for p in check_logprofile(profile, "x")] == ["LogProfileExample"]
    profile["spec"]["bogus"] = 1
    assert [p.code for p in check_logprofile(profile, "x")] == ["LogProfileInvalid"]


def test_loading_a_broken_folder_raises_with_every_problem(tmp_path, monkeypatch) -> None:
    from nvcre.compiler import logprofiles

    (tmp_path / "a.yaml").write_text(
        "apiVersion: nvcre.nvidia.com/v1alpha1\nkind: LogProfile\nmetadata: {name: a}\n"
        "spec: {timestamp: {layout: x}, patterns: {bandwidthResult: {regex: '(a', example: a}}}\n"
    )
    (tmp_path / "b.yaml").write_text("apiVersion: nvcre.nvidia.com/v1alpha1\nkind: LogProfile\nmetadata: {name: b}\n")
    monkeypatch.setattr(logprofiles, "logprofiles_dir", lambda: tmp_path)
    logprofiles._load.cache_clear()
    try:
        with pytest.raises(CompileError) as caught:
            logprofiles.builtin_logprofiles()
    finally:
        logprofiles._load.cache_clear()
    codes = sorted(d.code for d in caught.value.diagnostics)
    assert codes == ["LogProfileInvalid", "LogProfileRegex"]
