"""GPU product strings to architecture keys, with the rules of ``detection/gpu_architectures.yaml``.

A product is the value GPU Feature Discovery writes to ``nvidia.com/gpu.product``
(``NVIDIA-H100-80GB-HBM3``), the NVML name a DRA driver publishes (``NVIDIA H100 80GB HBM3``), or
a label that names a GPU the same way (GKE's ``nvidia-h100-mega-80gb``, Karpenter's ``h100``).
Kept apart from the detection modules so each of them can parse without importing the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .tables import table

__all__ = ["GPU_PRODUCT_LABEL", "parse_product"]

#: the label GPU Feature Discovery writes a node's product to
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"


#: products already parsed against the rules they were parsed with (a cluster holds few distinct
#: product strings, and detection asks for each node's several times)
_PARSED: dict[str, str] = {}
_PARSED_WITH: list[Any] = [None]
_PARSED_MAX = 4096


def parse_product(product: str) -> str:
    """The architecture key of a product string; ``""`` when there is nothing to parse.

    The ``NVIDIA-``/``NVIDIA `` and then the brand prefixes (``Tesla-``, ``GeForce-``...) are
    dropped and the named families matched in any case; a product line (``RTX``) takes its model
    token and qualifiers (``RTX-4000-Ada-Generation`` -> ``rtx4000ada``); otherwise the first
    hyphen- or space-separated token, lower-cased (``Tesla-V100-SXM2-16GB`` -> ``v100``,
    ``nvidia-tesla-t4`` -> ``t4``).
    """
    rules = table("gpu_architectures")
    if _PARSED_WITH[0] is not rules:
        _PARSED.clear()
        _PARSED_WITH[0] = rules
    key = product or ""
    found = _PARSED.get(key)
    if found is None:
        found = _parse(key, rules)
        if len(_PARSED) < _PARSED_MAX:
            _PARSED[key] = found
    return found


def _parse(product: str, rules: Mapping[str, Any]) -> str:
    rest = product.strip()
    for prefix in rules["stripPrefixes"]:
        if rest.upper().startswith(str(prefix).upper()):
            rest = rest[len(prefix) :]
    if not rest:
        return ""
    folded = rest.replace(" ", "-").upper()
    for family in rules["families"]:
        if folded.startswith(str(family["prefix"]).upper()):
            return str(family["architecture"])
    tokens = [token for token in folded.split("-") if token]
    if len(tokens) > 1 and tokens[0] in {str(line).upper() for line in rules.get("modelLines") or ()}:
        qualifiers = {str(q).upper() for q in rules.get("modelQualifiers") or ()}
        key = tokens[:2]
        for token in tokens[2:]:
            if token not in qualifiers:
                break
            key.append(token)
        return "".join(key).lower()
    cuts = [i for i in (rest.find("-"), rest.find(" ")) if i > 0]
    return (rest[: min(cuts)] if cuts else rest).lower()
