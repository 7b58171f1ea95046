"""``nvcrectl certification diff``: review what a change does to the rendered objects.

Reads two renders (files, render directories, or a path against a Git revision), computes the
semantic diff (``nvcre.compiler.diff``) and presents it as text for a terminal, markdown for a
pull-request comment, or JSON for tools. Exit codes: 0 equal, 1 different, 2 bad input.

Reading is most of the work for large renders, so render files go through
:mod:`.render_fast`: libyaml for plain data, the project's reader for anything else, the same
objects and errors either way.
"""

from __future__ import annotations

import difflib
import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from .output import guarded

#: ``certification diff`` (listed in the ``certification`` group by :mod:`nvcre.cli.typer_app`)
app = typer.Typer()

#: Longest value shown inline; longer ones are cut (the JSON output always carries them whole).
INLINE_LIMIT = 120


class DiffFormat(str, Enum):
    text = "text"
    markdown = "markdown"
    json = "json"


# --- values -------------------------------------------------------------------------------------


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def _inline(value: Any) -> str:
    text = _compact(value)
    return text if len(text) <= INLINE_LIMIT else text[: INLINE_LIMIT - 3] + "..."


def _multiline(change: Any) -> bool:
    """A change best shown as a line diff: two multi-line strings, or a changed list of plain values."""
    from nvcre.compiler.diff import ABSENT

    if change.old is ABSENT or change.new is ABSENT or change.change != "changed":
        return False
    if isinstance(change.old, str) and isinstance(change.new, str):
        return "\n" in change.old or "\n" in change.new
    return isinstance(change.old, list) and isinstance(change.new, list)


def _lines_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.splitlines()
    return [item if isinstance(item, str) else _compact(item) for item in value]


def _line_diff(change: Any) -> list[str]:
    """Unified-diff body lines (``-``, ``+``, `` `` context) between the old and new value."""
    lines = list(difflib.unified_diff(_lines_of(change.old), _lines_of(change.new), lineterm="", n=1))
    return [line for line in lines[2:]]


def _symbol(change: str) -> str:
    return {"added": "+", "removed": "-", "changed": "~", "reordered": "^"}[change]


def _describe(change: Any) -> str:
    from nvcre.compiler.diff import ABSENT

    if change.change == "added":
        return f"added {_inline(change.new)}"
    if change.change == "removed":
        return f"removed (was {_inline(change.old)})"
    if change.change == "reordered":
        return f"order {', '.join(change.old)} -> {', '.join(change.new)}"
    assert change.old is not ABSENT and change.new is not ABSENT
    return f"{_inline(change.old)} -> {_inline(change.new)}"


def _heading(obj: Any) -> str:
    if obj.status == "renamed":
        return f"{obj.kind} {obj.name} (renamed from {obj.old_name})"
    return f"{obj.kind} {obj.name} {obj.status}"


def _summary(result: Any) -> str:
    if result.equal:
        return "no differences"
    counts: dict[str, int] = {}
    for obj in result.objects:
        counts[obj.status] = counts.get(obj.status, 0) + 1
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    objects, categories = len(result.objects), len(result.categories())
    return (
        f"{_plural(objects, 'object')} {'differs' if objects == 1 else 'differ'} in "
        f"{_plural(categories, 'category', 'categories')}: {parts}"
    )


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


# --- formats ------------------------------------------------------------------------------------


def format_text(result: Any) -> str:
    out: list[str] = []
    for category, objects in result.categories():
        out.append(f"{category}")
        for obj in objects:
            out.append(f"  {_heading(obj)}")
            out.append(f"    because: {'; '.join(obj.causes)}")
            for change in obj.fields:
                if _multiline(change):
                    out.append(f"    ~ {change.path}:")
                    out.extend(f"        {line}" for line in _line_diff(change))
                else:
                    out.append(f"    {_symbol(change.change)} {change.path}: {_describe(change)}")
                if change.causes != obj.causes:
                    out.append(f"        because: {'; '.join(change.causes)}")
    out.append(_summary(result))
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    """A markdown table cell holding ``text`` as code, safe against pipes and backticks."""
    text = text.replace("|", "\\|").replace("\n", " ")
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def format_markdown(result: Any) -> str:
    from nvcre.compiler.diff import ABSENT

    out = ["## nvcre render diff", "", _summary(result) + "."]
    for category, objects in result.categories():
        out += ["", f"### {category}"]
        for obj in objects:
            out += ["", f"**{_heading(obj)}**: {'; '.join(obj.causes)}"]
            if not obj.fields:
                continue
            out += ["", "| field | change | old | new | cause |", "|---|---|---|---|---|"]
            blocks: list[str] = []
            for change in obj.fields:
                cause = "; ".join(change.causes).replace("|", "\\|")
                if _multiline(change):
                    old, new = "(see below)", "(see below)"
                    blocks += [
                        "",
                        f"<details><summary><code>{change.path}</code></summary>",
                        "",
                        "```diff",
                        *_line_diff(change),
                        "```",
                        "",
                        "</details>",
                    ]
                    out.append(f"| {_cell(change.path)} | {change.change} | {old} | {new} | {cause} |")
                    continue
                old = "" if change.old is ABSENT else _cell(_inline(change.old) if change.change != "reordered" else ", ".join(change.old))
                new = "" if change.new is ABSENT else _cell(_inline(change.new) if change.change != "reordered" else ", ".join(change.new))
                out.append(f"| {_cell(change.path)} | {change.change} | {old} | {new} | {cause} |")
            out += blocks
    return "\n".join(out) + "\n"


def format_json(result: Any) -> str:
    from nvcre.compiler.emit import dump_json

    data = result.as_dict()
    data["summary"] = _summary(result)
    return dump_json(data)


FORMATTERS = {DiffFormat.text: format_text, DiffFormat.markdown: format_markdown, DiffFormat.json: format_json}


# --- reading ------------------------------------------------------------------------------------


def read_side(path: Path) -> list[dict[str, Any]]:
    """A render file through the fast reader (the same objects and errors as the project's
    reader, sooner for plain renders); a render directory through the project's reader."""
    from .gitops import read_render
    from .render_fast import read_render_fast

    return read_render(path) if path.is_dir() or not path.exists() else read_render_fast(path)


# --- command ------------------------------------------------------------------------------------


@app.command("diff")
@guarded
def diff(
    old: Annotated[Path, typer.Argument(help="The old render: a file (YAML stream or JSON array) or a render directory.")],
    new: Annotated[Path | None, typer.Argument(help="The new render; with --git, leave it out: OLD is then the path to compare.")] = None,
    git: Annotated[
        str | None, typer.Option("--git", help="Compare the path with its content at this Git revision (git show REV:path).")
    ] = None,
    output: Annotated[DiffFormat, typer.Option("--output", "-o", help="text, markdown (for a PR comment) or json.")] = DiffFormat.text,
) -> None:
    """Semantic diff of two renders by category, object and field, naming the overlay or fact behind each change.

    Exit code 0 when the renders are equal, 1 when they differ, 2 on bad input.
    """
    from nvcre.compiler.diagnostics import CompileError, error
    from nvcre.compiler.diff import diff_renders

    from .gitops import read_render, read_render_at

    if git is not None:
        if new is not None:
            raise CompileError([error("InvalidArguments", "NEW", "with --git give one path: it is compared with itself at the revision")])
        before = read_render_at(git, old)
        after = read_render(old) if old.exists() else []  # deleted since the revision: all removed
    else:
        if new is None:
            raise CompileError([error("InvalidArguments", "NEW", "give two renders (OLD NEW), or one path with --git REV")])
        before, after = read_side(old), read_side(new)
    result = diff_renders(before, after)
    sys.stdout.write(FORMATTERS[output](result))
    if not result.equal:
        raise typer.Exit(1)
