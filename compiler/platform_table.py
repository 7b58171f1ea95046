"""The platform x GPU-architecture table of docs/platforms.md, generated from the overlay data.

For every platform and every architecture the catalog knows, the overlays whose ``when`` can
match that pair (an overlay with a CEL ``expression`` is listed with its condition), in the
order they apply, with the entries they touch and their one-line reasons. Because the page is
generated, it cannot drift from the data: a test compares it with the committed file.
"""

from __future__ import annotations

from .catalog import load_catalog
from .overlays import Overlay, OverlaySet, load_overlays

__all__ = ["render_platform_table"]

HEADER = """# Platforms

Generated from the overlay files under `platforms/` by `scripts/gen_platform_table.py`; do not
edit by hand. Each row is a platform and GPU architecture; the overlays listed apply to a render
for that pair in the order shown (a condition in brackets must also hold). Pairs that no overlay
names render the catalog entries unchanged.

| platform | GPU | overlays, in order | entries | what changes |
|---|---|---|---|---|
"""


def _could_match(overlay: Overlay, platform: str, arch: str) -> bool:
    when = overlay.when
    if when.platform is not None and not when.platform.matches(platform):
        return False
    if when.gpu_architecture is not None and not when.gpu_architecture.matches(arch):
        return False
    return True


def _entries(overlay: Overlay, all_entries: list[str]) -> str:
    clause = overlay.when.entry
    if clause is None:
        return "all"
    chosen = [e for e in all_entries if clause.matches(e)]
    if len(chosen) == len(all_entries):
        return "all"
    return ", ".join(e.split("/")[1] for e in chosen)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_platform_table(overlays: OverlaySet | None = None, platforms: list[str] | None = None) -> str:
    from .detect import platform_names

    overlays = overlays or load_overlays()
    catalog = load_catalog()
    archs = sorted(catalog.gpu_defaults.architectures)
    all_entries = catalog.keys()
    rows = []
    for platform in platforms or platform_names():
        for arch in archs:
            # Platform-independent overlays (no platform clause) appear on every row they match,
            # but a row is printed only when something specific to it, or an arch guard, applies.
            matching = [o for o in overlays.overlays if _could_match(o, platform, arch)]
            specific = [o for o in matching if o.when.platform is not None or o.when.gpu_architecture is not None]
            if not specific:
                continue
            names = "<br>".join(f"`{o.name}`" + (f" [{o.when.expression}]" if o.when.expression else "") for o in matching)
            entries = "<br>".join(_entries(o, all_entries) for o in matching)
            reasons = "<br>".join(_cell(o.reason) for o in matching)
            rows.append(f"| {platform} | {arch} | {_cell(names)} | {entries} | {reasons} |\n")
    return HEADER + "".join(rows)
