"""No credential ever reaches an evidence bundle: a ``sourceRepo`` token is redacted before anything is digested or signed."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from nvcre.runtime.evidence import dsse
from nvcre.runtime.evidence.assemble import assemble
from nvcre.runtime.evidence.bundle import write_bundle
from nvcre.runtime.evidence.workflows import render_run
from tests.evidencekit import cases

NVCRECTL = Path(sys.executable).with_name("nvcrectl")
TOKEN = "ghp_SECRETTOKEN0123456789"
URL = f"https://build-bot:{TOKEN}@github.com/example/Megatron-LM.git"


def with_token(case: str) -> list[dict[str, Any]]:
    """The recorded run with the token in ``sourceRepo`` and in every Workflow's failure message."""
    docs = copy.deepcopy(cases.documents(case))
    for doc in docs:
        if doc["kind"] == "Certification":
            doc["spec"]["sourceRepo"] = URL
        if doc["kind"] in ("Workflow", "Job"):
            for condition in (doc.get("status") or {}).get("conditions") or []:
                if condition.get("status") == "True":
                    condition["message"] = f"{condition.get('message', '')} (cloning {URL} failed)"
    return docs


def keypair(folder: Path) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    private, public = folder / "k.key", folder / "k.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


@pytest.mark.parametrize("case", cases.CASES)
def test_no_file_of_a_signed_bundle_holds_the_token(tmp_path: Path, case: str) -> None:
    private, public = keypair(tmp_path)
    contents = assemble(*cases.build(with_token(case)), signer=dsse.load_signer(private))
    leaking = [name for name, data in contents.files.items() if TOKEN.encode() in data]
    assert leaking == []
    workflows = [data for name, data in contents.files.items() if name.startswith("workflows/")]
    if case == "passed":  # the training category clones the repository
        assert any(b"https://***@github.com/example/Megatron-LM.git" in data for data in workflows)
    ET.fromstring(contents.files["junit.xml"])  # still well-formed after redaction
    json.loads(contents.files["report.json"])
    bundle = tmp_path / "bundle"
    write_bundle(contents, bundle)
    done = subprocess.run(
        [str(NVCRECTL), "evidence", "verify", str(bundle), "--key", str(public)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.startswith("verified: "), done.stderr
    assert not [p for p in bundle.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]


def test_live_workflows_standing_in_for_the_render_are_redacted_too() -> None:
    objects, _ = cases.build(with_token("passed"))
    live = copy.deepcopy(list(objects.workflows))
    for workflow in live:
        workflow.setdefault("spec", {}).setdefault("jobTemplate", {})["note"] = URL
    broken = copy.deepcopy(dict(objects.run))
    broken["spec"]["categories"] = [{"domain": "no-such-domain", "variant": "none"}]
    rendered = render_run(broken, live, objects.nodes)
    assert rendered.source == "cluster" and rendered.files
    assert all(TOKEN.encode() not in data and b"https://***@github.com" in data for _, data in rendered.files)


def test_markup_redaction_stays_inside_the_text_it_hides() -> None:
    from nvcre.compiler.redact import redact_markup

    page = f'<td title="https://a:{TOKEN}@h/x">see</td><td>https://u:p&amp;q@host/ and "x://y"</td><a>z@w</a>'
    redacted = redact_markup(page)
    assert TOKEN not in redacted and "p&amp;q" not in redacted
    assert redacted == '<td title="https://***@h/x">see</td><td>https://***@host/ and "x://y"</td><a>z@w</a>'
