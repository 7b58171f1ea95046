"""The fast path of ``nvcrectl certification render FILE``: the same render without Typer or Click.

Pipelines and Argo CD run a render as a fresh process on every sync, and building the Typer
application (Typer, Click, the option converters of every parameter) costs more CPU than the
render itself. :func:`fast_plan` reads the command line by hand, and takes it only when it is
plainly a render of one file with flags among ``--platform``, ``--gpu-arch``, ``--facts``,
``--output``/``-o``, ``--namespace``/``-n`` and ``--env-prefix``, each given once, each value
one that Click would hand over unchanged. Anything else (help, ``--explain``, ``--dry-run``,
``--output-dir``, standard input, a directory, a repeated or unknown flag) returns None and goes
to Typer.

:meth:`FastRender.run` does what the Typer command does, through the same functions
(:mod:`nvcre.cli.render_flags`, the compiler, the emitters), but prints only on success: when
anything fails before the output is ready it returns False, having printed nothing, and the
caller runs the Typer command, which fails the same way and reports it in its usual words.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["FastRender", "fast_plan"]

#: Flags that take a value, by every spelling Click accepts, and the field each fills.
_VALUED = {
    "--platform": "platform",
    "--gpu-arch": "gpu_arch",
    "--facts": "facts",
    "--output": "output",
    "-o": "output",
    "--namespace": "namespace",
    "-n": "namespace",
    "--env-prefix": "env_prefix",
}

#: The values of ``--output`` (Click's choice is case-sensitive).
_FORMATS = ("yaml", "json")


class FastRender(NamedTuple):
    """A ``certification render`` command line the fast path can run, as Typer would hand it over."""

    file: Path
    platform: str | None = None
    gpu_arch: str | None = None
    facts: Path | None = None
    output: str = "yaml"
    namespace: str | None = None
    env_prefix: str | None = None

    def run(self) -> bool:
        """Render and print; False (nothing printed) when the Typer command must run instead."""
        try:
            ready = self._prepare()
        except KeyboardInterrupt:
            sys.stderr.write("interrupted\n")
            sys.exit(130)
        except Exception:  # noqa: BLE001 - the Typer command runs it again and reports the failure itself
            return False
        if ready is None:
            return False
        diagnostics, text = ready
        from .output import print_diagnostics

        try:
            print_diagnostics(diagnostics)
            sys.stdout.write(text)
        except KeyboardInterrupt:
            sys.stderr.write("interrupted\n")
            sys.exit(130)
        except Exception as exc:  # the contract: a clear line, never a traceback (as ``guarded`` says it)
            sys.stderr.write(f"error: {type(exc).__name__}: {exc}\n")
            sys.exit(1)
        return True

    def _prepare(self) -> tuple[list[Any], str] | None:
        """(diagnostics, the text for stdout), or None when standard input would be read."""
        from .render_flags import check_namespace_flag, flags_from_env, in_namespace, load_facts, load_single

        platform, gpu_arch, facts = flags_from_env(self.env_prefix, self.platform, self.gpu_arch, self.facts)
        if facts is not None and str(facts) == "-":
            return None  # standard input can be read once only: Typer reads it
        check_namespace_flag(self.namespace)
        from nvcre.compiler.emit import dump_json, dump_yaml_stream
        from nvcre.compiler.render import render_certification

        document = load_single(self.file)
        rendered = render_certification(document, facts=load_facts(facts), platform=platform, gpu_arch=gpu_arch)
        workflows = in_namespace(rendered.workflows, document, self.namespace, str(self.file))
        text = dump_json(workflows) if self.output == "json" else dump_yaml_stream(workflows)
        return list(rendered.diagnostics), text


def fast_plan(argv: list[str]) -> FastRender | None:
    """The render ``argv`` (without the program name) asks for, or None when Typer must read it."""
    if len(argv) < 3 or argv[0] != "certification" or argv[1] != "render":
        return None
    values: dict[str, str] = {}
    positional: list[str] = []
    rest = argv[2:]
    index = 0
    while index < len(rest):
        token = rest[index]
        index += 1
        if not token.startswith("-"):
            positional.append(token)
            continue
        name, equals, value = token.partition("=")
        if not equals:
            name = token
        if name not in _VALUED or (equals and not name.startswith("--")):
            return None  # help, a flag without a value, ``--``, ``-`` (stdin), a joined short option, a typo
        if not equals:
            if index >= len(rest):
                return None
            value = rest[index]
            index += 1
            if value.startswith("-"):
                return None  # Click would take it as the value; whether it meant to is Typer's to say
        field = _VALUED[name]
        if field in values:
            return None
        values[field] = value
    if len(positional) != 1:
        return None
    file = Path(positional[0])
    if not file.is_file():
        return None  # a directory, a missing path, a FIFO: the Typer command says what happens
    output = values.get("output", "yaml")
    if output not in _FORMATS:
        return None
    facts = values.get("facts")
    return FastRender(
        file=file,
        platform=values.get("platform"),
        gpu_arch=values.get("gpu_arch"),
        facts=Path(facts) if facts is not None else None,
        output=output,
        namespace=values.get("namespace"),
        env_prefix=values.get("env_prefix"),
    )
