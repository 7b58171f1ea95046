#!/usr/bin/env python3
"""Check that committed nvcre renders match a fresh render of their sources.

Usage (from a checkout, with nvcre installed):

    python scripts/check_renders.py --config examples/flux/nvcre-renders.yaml
    python scripts/check_renders.py --config nvcre-renders.yaml --fix

The config lists each source document and where its render is committed (``outputDir`` for a
render directory, ``output`` for one YAML stream) with the flags it renders with; paths are
relative to the config file. Exit 0 when every render is current, 1 when one is stale (each
stale file is named on stderr), 2 when the config or a source is invalid. It is the same check
the ``nvcre-check-renders`` pre-commit hook runs (``python -m nvcre.cli.gitops check-renders``).
"""

from __future__ import annotations

import sys

from nvcre.cli.gitops import app


def main(argv: list[str]) -> None:
    app(args=["check-renders", *argv], prog_name="check_renders.py")


if __name__ == "__main__":
    main(sys.argv[1:])
