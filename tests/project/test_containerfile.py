"""The controller's Containerfile, checked statically: pinned base, numeric non-root user, no shell at run time."""

from __future__ import annotations

import json
import re
from pathlib import Path

from nvcre.compiler.install import render_install

REPO = Path(__file__).resolve().parents[2]
CONTAINERFILE = REPO / "Containerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", CONTAINERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def stages() -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for instruction in instructions():
        if instruction[0] == "FROM":
            found.append([])
        if found:
            found[-1].append(instruction)
    return found


def test_every_base_is_pinned_by_a_digest_argument_without_a_default() -> None:
    args = dict(rest.partition("=")[::2] for word, rest in instructions() if word == "ARG")
    assert "PYTHON_DIGEST" in args and args["PYTHON_DIGEST"] == ""  # no default: a build must pin it
    froms = [rest for word, rest in instructions() if word == "FROM"]
    assert len(froms) >= 2  # multi-stage
    for base in froms:
        image = base.split()[0]
        assert image.endswith("@${PYTHON_DIGEST}"), base


def test_the_runtime_stage_is_non_root_and_starts_without_a_shell() -> None:
    final = stages()[-1]
    users = [rest for word, rest in final if word == "USER"]
    assert users and re.fullmatch(r"[1-9][0-9]*:[1-9][0-9]*", users[-1])
    (entrypoint,) = [rest for word, rest in final if word == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["python", "-m", "nvcre.runtime"]  # exec form: no /bin/sh -c
    assert not [rest for word, rest in final if word in ("RUN", "CMD")]
    shell_form = [rest for word, rest in instructions() if word == "RUN" and not rest.startswith("[")]
    assert not shell_form
    env = " ".join(rest for word, rest in final if word == "ENV")
    assert "HOME=/tmp" in env and "PYTHONDONTWRITEBYTECODE=1" in env


def test_the_image_user_is_the_one_the_deployment_runs_as() -> None:
    (user,) = [rest for word, rest in stages()[-1] if word == "USER"]
    uid, gid = (int(part) for part in user.split(":"))
    deployment = next(o for o in render_install().objects if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (uid, gid)
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    assert container["command"] == json.loads([r for w, r in stages()[-1] if w == "ENTRYPOINT"][0])
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]


def test_the_build_context_leaves_local_state_out() -> None:
    ignored = set((REPO / ".containerignore").read_text().split())
    assert {".git", ".venv", "tests"} <= ignored
    copied = {rest.split()[0] for word, rest in instructions() if word == "COPY" and not rest.startswith("--from")}
    assert not copied & ignored


def test_the_build_stage_sees_source_date_epoch() -> None:
    """pip compiles checked-hash bytecode only when SOURCE_DATE_EPOCH reaches its RUN; timestamp
    bytecode goes stale once the build gives the layer's files other times (about 450 modules
    compiled again at every start, measured by tests/integration/test_image_sim.py)."""
    build = stages()[0]
    declared = [i for i, (word, rest) in enumerate(build) if word == "ARG" and rest == "SOURCE_DATE_EPOCH"]
    compile_runs = [i for i, (word, rest) in enumerate(build) if word == "RUN" and "--compile" in rest]
    assert declared and compile_runs and declared[0] < compile_runs[0]
