"""Entry point of ``nvcrectl``: a plain render takes the fast path, anything else goes to Typer.

Nothing heavy is imported at module level. ``nvcrectl certification render FILE`` with only the
flags :mod:`nvcre.cli.render_shortcut` understands renders without loading Typer, Click or any other
command group; every other command line, and any render that fails, runs through the Typer
application in :mod:`nvcre.cli.typer_app`, which says exactly what it always said. The names
that application defines (``app``, ``mount_commands``, ``needs_every_group``, ``version_line``...)
stay reachable here, loaded on first use.

A command line is a short-lived process, and two costs of CPython's cyclic garbage collector buy
it nothing: full collections while hundreds of modules are imported (everything imported is
alive until the end), and the collections interpreter shutdown runs over every object left.
So the fast render runs with the collector paused (one render of one bounded file; reference
counting still frees everything that is not a cycle), and the objects alive when the process
exits are frozen first (:func:`gc.freeze`), which leaves shutdown's collections nothing to walk.
Both only change when memory is reclaimed, never what is printed.
"""

from __future__ import annotations

import atexit
import gc
from typing import Any

#: Attributes of this module that live in :mod:`nvcre.cli.typer_app` (importing it loads Typer).
_TYPER_NAMES = frozenset({"app", "main", "mount_commands", "needs_every_group", "version_command", "version_line"})


def __getattr__(name: str) -> Any:
    if name in _TYPER_NAMES:
        from . import typer_app

        return getattr(typer_app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _run_fast(plan: Any) -> bool:
    """The fast render with the cyclic collector paused (restored as it was, whatever happens)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return bool(plan.run())
    finally:
        if was_enabled:
            gc.enable()


def run() -> None:
    import os
    import sys

    from .closed_stdout import EXIT_STDOUT_CLOSED, StdoutClosed, watch_stdout

    argv = sys.argv[1:]
    completing = bool(os.environ.get("_NVCRECTL_COMPLETE"))
    plan = None
    if not completing:
        from .render_shortcut import fast_plan

        plan = fast_plan(argv)
    watch_stdout()
    atexit.register(gc.freeze)  # what is alive at exit is frozen, so shutdown's collections skip it
    try:
        try:
            if plan is None or not _run_fast(plan):
                from .typer_app import start

                start(argv, completing)
        finally:
            sys.stdout.flush()  # here, so a reader that went away is noticed before the interpreter exits
    except StdoutClosed:
        sys.exit(EXIT_STDOUT_CLOSED)
    except BaseExceptionGroup as group:  # raised inside a task group (mcp serve): the same, if that is all it holds
        _, rest = group.split(StdoutClosed)
        if rest is not None:
            raise
        sys.exit(EXIT_STDOUT_CLOSED)


if __name__ == "__main__":
    run()
