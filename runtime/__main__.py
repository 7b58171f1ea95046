"""``python -m nvcre.runtime``: run the controller (the same flags as ``nvcrectl controller``)."""

from __future__ import annotations

import sys

from .main import main

if __name__ == "__main__":
    sys.exit(main())
