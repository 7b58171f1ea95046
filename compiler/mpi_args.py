"""Read and edit the ``-x`` pairs of an mpirun command line.

mpirun forwards an environment variable to every rank with a pair of arguments: ``-x NAME``
forwards the launcher's own value, ``-x NAME=VALUE`` sets the value. The helpers here find
those pairs, list the names they forward, and set one name while keeping the rest of the
command line as it was. Every function returns a new list; none changes the one it is given.
"""

from __future__ import annotations

from typing import Sequence

__all__ = [
    "FORWARD_FLAG",
    "NoForwardAnchor",
    "forward_pairs",
    "forwarded_names",
    "forward_arg",
    "set_forwarded",
    "drop_forwarded",
]

FORWARD_FLAG = "-x"


class NoForwardAnchor(ValueError):
    """Raised when a new name must be forwarded but the command line holds no ``-x`` pair to follow."""


def forward_pairs(args: Sequence[str]) -> list[tuple[int, str]]:
    """``(index of the -x flag, forwarded name)`` for every complete ``-x`` pair, in order.

    A trailing ``-x`` with nothing after it is not a pair. The name is the part of the
    argument before the first ``=``.
    """
    pairs: list[tuple[int, str]] = []
    index = 0
    while index < len(args) - 1:
        if args[index] == FORWARD_FLAG:
            pairs.append((index, str(args[index + 1]).split("=", 1)[0]))
            index += 2
        else:
            index += 1
    return pairs


def forwarded_names(args: Sequence[str]) -> list[str]:
    """Every name forwarded with ``-x``, in command-line order, repeats included."""
    return [name for _, name in forward_pairs(args)]


def forward_arg(name: str, value: str | None) -> str:
    """The argument after ``-x``: ``NAME=VALUE`` verbatim (mpirun gets an argv, not a shell line), or ``NAME``."""
    return name if value is None else f"{name}={value}"


def set_forwarded(args: Sequence[str], name: str, value: str | None) -> list[str]:
    """Forward ``name`` with ``value`` (``None`` forwards the launcher's own value as ``-x NAME``).

    Every pair that already forwards ``name`` is rewritten where it stands. Otherwise a new
    pair goes right after the last ``-x`` pair, so names added one after another keep their
    order. Raises NoForwardAnchor when there is no pair to follow.
    """
    result = list(args)
    pairs = forward_pairs(result)
    matches = [index for index, forwarded in pairs if forwarded == name]
    if matches:
        for index in matches:
            result[index + 1] = forward_arg(name, value)
        return result
    if not pairs:
        raise NoForwardAnchor(f"no {FORWARD_FLAG} pair to place {name} after")
    anchor = pairs[-1][0] + 2
    result[anchor:anchor] = [FORWARD_FLAG, forward_arg(name, value)]
    return result


def drop_forwarded(args: Sequence[str], name: str) -> list[str]:
    """Remove every pair that forwards ``name``; other arguments keep their order."""
    drop = {index for index, forwarded in forward_pairs(args) if forwarded == name}
    return [arg for index, arg in enumerate(args) if index not in drop and index - 1 not in drop]
