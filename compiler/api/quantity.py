"""Kubernetes resource quantities ("500Gi", "64", "1.5", "100m", "1e3") as exact fractions.

Used by the offline validator to give cel-python the quantity functions the API server's CEL
has (``quantity``, ``isQuantity``, ``compareTo``). Only comparison is needed, so a quantity
is held as a ``Fraction`` of its value in base units.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .patterns import QUANTITY

__all__ = ["parse_quantity", "is_quantity"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SPLIT = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")
_WHOLE = re.compile(QUANTITY)


def is_quantity(text: str) -> bool:
    return _WHOLE.fullmatch(text) is not None


def parse_quantity(text: str) -> Fraction:
    """The value of ``text``; ValueError when it is not a quantity."""
    if not is_quantity(text):
        raise ValueError(f"{text!r} is not a quantity")
    number, suffix = _SPLIT.match(text).groups()  # type: ignore[union-attr]
    value = Fraction(number)
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    if suffix in _DECIMAL:
        return value * Fraction(10) ** _DECIMAL[suffix]
    # An exponent: e3, E-2, e+1.5 is not allowed by Kubernetes but the pattern accepts digits only.
    exponent = Fraction(suffix[1:])
    if exponent.denominator != 1:
        raise ValueError(f"{text!r} has a fractional exponent")
    return value * Fraction(10) ** int(exponent)
