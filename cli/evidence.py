"""``nvcrectl evidence``: check a bundle (``verify``) and compare bundles (``compare``).

Bundles are written by ``certification evidence NAME`` / ``workloadrun evidence NAME`` (through
:func:`write_evidence` here) and by ``run --evidence DIR`` (by the run itself, from the verdict it
printed). Exit codes: 0 verified
(or no regression), 1 the bundle does not match (or a node regressed), 2 invalid input, always
as one line on stderr and never a traceback. Whatever a bundle holds, reading it never ends in
exit 1 by accident: for ``compare`` 1 means "regressed", so anything unreadable is exit 2.

What was checked is always said: ``verify`` prints ``verified`` only when the signature was
verified with ``--key``; without a key it says that only the files were checked against the
Statement. ``compare`` says on every output whether the bundles' signatures were checked, and
with ``--key`` checks every one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from .output import EXIT_FAILURE, EXIT_INVALID, guarded

app = typer.Typer(help="Check and compare evidence bundles (signed, self-contained run records).", no_args_is_help=True)

SignKeyOption = Annotated[
    Path | None,
    typer.Option(
        "--sign-key",
        help="Sign the Statement with this PEM private key (ECDSA P-256 or Ed25519; an encrypted key reads its "
        "password from NVCRE_SIGN_KEY_PASSWORD).",
    ),
]


class CompareFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


def _invalid(message: str) -> typer.Exit:
    sys.stderr.write(f"error: {message}\n")
    return typer.Exit(EXIT_INVALID)


#: what reading a hostile bundle may still raise below the checks (the checks turn the known
#: cases into EvidenceError): a bundle that cannot be read is invalid input, never a failure
_UNREADABLE = (OSError, RecursionError, MemoryError, UnicodeError, ValueError)


def _unreadable(exc: BaseException) -> typer.Exit:
    return _invalid(f"cannot read the bundle: {type(exc).__name__}: {str(exc)[:200]}")


KeyOption = Annotated[
    Path | None,
    typer.Option("--key", help="PEM public key every bundle's Statement must be signed with (without it: the files only)."),
]


def load_signer_or_exit(sign_key: Path | None) -> Any:
    """The signer of ``--sign-key`` (None without it); exit 2 with one line when it cannot be used."""
    if sign_key is None:
        return None
    from nvcre.runtime.evidence import EvidenceError
    from nvcre.runtime.evidence.dsse import load_signer

    try:
        return load_signer(sign_key)
    except EvidenceError as exc:
        raise _invalid(f"--sign-key: {exc}") from None


def write_evidence(kube: Any, kind: str, name: str, namespace: str, out: Path, signer: Any = None) -> None:
    """Gather the run's objects, judge them and write the bundle to ``out`` (all or nothing)."""
    from nvcre.runtime.evidence import EvidenceError
    from nvcre.runtime.evidence.of_run import EvidenceRequest, write_objects
    from nvcre.runtime.ops.evidence_objects import gather

    objects, verdict = gather(kube, kind, name, namespace)
    try:
        said = write_objects(objects, verdict, EvidenceRequest(out, signer))
    except EvidenceError as exc:
        raise _invalid(str(exc)) from None
    sys.stderr.write(said)


def evidence_command(kind: str, name: str, namespace: str, out: Path, sign_key: Path | None, kubeconfig: Any, context: Any) -> None:
    """Body of ``certification evidence`` and ``workloadrun evidence``."""
    from nvcre.runtime.ops.collect import RunNotFound

    from .common import kube_client

    signer = load_signer_or_exit(sign_key)
    kube = kube_client(kubeconfig, context)
    try:
        write_evidence(kube, kind, name, namespace, out, signer)
    except RunNotFound as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(EXIT_FAILURE) from None


@app.command("verify")
@guarded
def verify(
    bundle: Annotated[Path, typer.Argument(help="The bundle directory.")],
    key: KeyOption = None,
) -> None:
    """Check every file of a bundle against its Statement and, with --key, the Statement's signature."""
    from nvcre.runtime.evidence import EvidenceError, Mismatch
    from nvcre.runtime.evidence.bundle import check_bundle
    from nvcre.runtime.evidence.dsse import load_public_key

    try:
        public_key = load_public_key(key) if key is not None else None
        checked = check_bundle(bundle, public_key)
    except EvidenceError as exc:
        raise _invalid(str(exc)) from None
    except Mismatch as exc:
        sys.stderr.write(f"does not match: {exc}\n")
        raise typer.Exit(EXIT_FAILURE) from None
    except _UNREADABLE as exc:
        raise _unreadable(exc) from None
    run = checked.statement["predicate"].get("run") or {}
    subject = f"{run.get('kind', '')} {run.get('namespace', '')}/{run.get('name', '')} {run.get('result', '')}"
    files = f"{checked.files} files match the Statement"
    if checked.signature_checked:
        line = f"verified: {bundle}: {files}; signature verified with key {checked.key_id[:16]}"
    elif checked.signed:
        line = (
            f"files match, signature NOT verified: {bundle}: {files}; the Statement is signed, but without --key "
            "nobody's signature was checked (anyone could have edited and re-signed it)"
        )
    else:
        line = f"files match, unsigned: {bundle}: {files}; the bundle carries no signature, so nothing shows who wrote it"
    sys.stdout.write(f"{line}; {subject}\n")


@app.command("compare")
@guarded
def compare(
    old: Annotated[Path, typer.Argument(help="The earlier bundle, or a directory of bundles.")],
    new: Annotated[Path, typer.Argument(help="The later bundle, or a directory of bundles.")],
    output: Annotated[CompareFormat, typer.Option("--output", "-o")] = CompareFormat.text,
    tolerance: Annotated[
        float,
        typer.Option(
            "--tolerance",
            help="Base regression tolerance in percent: how far a value may fall below the OLD floor; "
            "a median may fall this much plus twice the OLD side's own noise (capped).",
            min=0.0,
            max=100.0,
        ),
    ] = 5.0,
    key: KeyOption = None,
) -> None:
    """Per node and per group: the change in bus bandwidth and goodput; exit 1 when a node regressed."""
    from nvcre.runtime.evidence import EvidenceError, compare_render
    from nvcre.runtime.evidence import compare as comparing
    from nvcre.runtime.evidence.dsse import load_public_key

    try:
        public_key = load_public_key(key) if key is not None else None
        result = comparing.compare_paths(old, new, tolerance=tolerance / 100, public_key=public_key)
    except EvidenceError as exc:
        raise _invalid(str(exc)) from None
    except _UNREADABLE as exc:
        raise _unreadable(exc) from None
    render = {
        CompareFormat.text: compare_render.render_text,
        CompareFormat.json: compare_render.render_json,
        CompareFormat.markdown: compare_render.render_markdown,
    }
    sys.stdout.write(render[output](result))
    if result.regressed_nodes:
        sys.stderr.write(f"error: {len(result.regressed_nodes)} node(s) regressed: {', '.join(result.regressed_nodes)}\n")
        raise typer.Exit(EXIT_FAILURE)


def evidence_command_for(kind: str) -> Callable[..., None]:
    """The ``evidence NAME --out DIR`` command of one run kind (Certification or WorkloadRun)."""

    def evidence(
        name: str = typer.Argument(..., help=f"{kind} name."),
        out: Path = typer.Option(..., "--out", help="The bundle directory to create (must be absent or empty)."),
        namespace: str = typer.Option("default", "--namespace", "-n"),
        sign_key: Path | None = typer.Option(None, "--sign-key", help="Sign with this PEM private key (ECDSA P-256 or Ed25519)."),
        kubeconfig: Path | None = typer.Option(None, "--kubeconfig", help="Path to a kubeconfig (default: the usual loading rules)."),
        context: str | None = typer.Option(None, "--context", help="Kubeconfig context to use."),
    ) -> None:
        evidence_command(kind, name, namespace, out, sign_key, kubeconfig, context)

    evidence.__doc__ = f"Write the {kind}'s evidence bundle: reports, HTML, rendered Workflows, cluster identity, an in-toto Statement."
    return evidence
