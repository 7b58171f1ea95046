"""Regenerate the CRDs in compiler/api/crds/ from the API models.

python scripts/gen_crds.py          # rewrite the files
python scripts/gen_crds.py --check  # exit 1, listing the files, when they are out of date
"""

from __future__ import annotations

import sys

from nvcre.compiler.api.crdgen import CRD_DIR, render_crds, write_crds


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        rendered = render_crds()
        stale = [
            name
            for name, text in sorted(rendered.items())
            if not (CRD_DIR / name).exists() or (CRD_DIR / name).read_text(encoding="utf-8") != text
        ]
        extra = sorted(p.name for p in CRD_DIR.glob("*.yaml") if p.name not in rendered)
        for name in stale + extra:
            print(f"out of date: {CRD_DIR.name}/{name}")
        return 1 if stale or extra else 0
    if argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path in write_crds():
        print(f"wrote {CRD_DIR.name}/{path.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
