"""The HTML report: self-contained, escaped, readable without colour, and opened in a real browser.

The browser tests start Debian's headless Chromium on the page as a file (no server, no network)
and read its console log and the DOM it built; they skip when Chromium is absent, except in CI.
``NVCRE_UPDATE_EVIDENCE_SCREENSHOTS=1`` also writes the screenshots under docs/images/.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from nvcre.runtime.evidence.assemble import assemble
from tests.evidencekit import cases

REPO = Path(__file__).resolve().parents[3]
IMAGES = REPO / "docs" / "images"
CONSOLE = re.compile(r":CONSOLE(?::\d+|\(\d+\))\]\s*(.*)")


class Page(HTMLParser):
    """Tags, attributes, text and SVG titles of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.titles: list[str] = []
        self._in_title = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "title":
            self._in_title += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title -= 1

    def handle_data(self, data: str) -> None:
        (self.titles if self._in_title else self.text).append(data)


def page(html: str) -> Page:
    parsed = Page()
    parsed.feed(html)
    return parsed


def html_of(case: str | list[dict[str, Any]]) -> str:
    built = cases.case(case) if isinstance(case, str) else cases.build(case)
    return assemble(*built).files["report.html"].decode("utf-8")


@pytest.mark.parametrize("name", cases.CASES)
def test_the_page_needs_nothing_from_outside(name: str) -> None:
    html = html_of(name)
    parsed = page(html)
    tags = {t for t, _ in parsed.tags}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed"}
    for tag, attrs in parsed.tags:
        for key, value in attrs.items():
            assert key not in ("src", "href") and not (key == "style" and "url(" in (value or "")), (tag, key, value)
    assert "@import" not in html and "url(" not in html and "@font-face" not in html
    assert "@media print" in html


def test_the_failed_report_says_what_failed_in_words_and_on_hover() -> None:
    parsed = page(html_of("failed"))
    text, titles = " ".join(parsed.text), " ".join(parsed.titles)
    assert "FAILED" in text and "FAIL" in text and "PASS" in text
    failed = cases.case("failed")[1].failed_node_names
    assert len(failed) == 2
    for node in failed:
        assert f"{node}: FAIL - ThresholdViolation" in titles, "the node grid's hover names the reason"
    assert text.count("ThresholdViolation") >= len(failed), "and so does the text"
    assert "min 100000 (off scale)" in text, "the threshold is drawn even beyond every bar"
    assert sum(1 for t, _ in parsed.tags if t == "svg") >= 5  # bars and curve per category, the grid, the timeline


def test_the_passed_report_draws_every_chart_the_run_measured() -> None:
    parsed = page(html_of("passed"))
    text, titles = " ".join(parsed.text), " ".join(parsed.titles)
    assert "PASSED" in text and "FAIL " not in text
    for heading in (
        "Bus bandwidth per group",
        "Bus bandwidth by message size",
        "Goodput per training group",
        "Step time per training group",
        "Nodes by topology domain",
        "Timeline",
    ):
        assert heading in text, heading
    assert "message size (log scale)" in text
    assert re.search(r"group-0: \d+ (B|KB|MB|GB) [\d.]+ GB/s", titles), "each curve point has its value on hover"
    # outcomes are words as well as colours, and curves differ by marker shape as well as hue
    assert text.count("PASS") >= 8
    shapes = {t for t, a in parsed.tags if (a.get("class") or "") == "mk"}
    assert {"circle", "rect"} <= shapes


def test_names_and_messages_from_the_cluster_are_escaped() -> None:
    docs = copy.deepcopy(cases.documents("failed"))
    hostile = '<script>alert("x")</script>'
    for doc in docs:
        if doc["kind"] == "Node":
            doc["metadata"]["labels"]["nvidia.com/gpu.product"] = hostile
        for condition in (doc.get("status") or {}).get("conditions") or []:
            condition["message"] = hostile
    html = html_of(docs)
    assert "<script>" not in html
    assert html.count("&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") >= 2


# ------------------------------------------------------------------ in a browser


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "Chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found


def run_browser(binary: str, url: str, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    profile.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            *extra,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def console_messages(stderr: str) -> list[str]:
    return [m.group(1) for m in (CONSOLE.search(line) for line in stderr.splitlines()) if m]


def test_the_console_check_catches_an_error(tmp_path: Path) -> None:
    binary = chromium()
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><p>x</p><script>console.error("seen"); missing();</script></body></html>')
    done = run_browser(binary, bad.as_uri(), tmp_path / "profile", "--dump-dom")
    messages = console_messages(done.stderr)
    assert any("seen" in m for m in messages) and any("missing is not defined" in m for m in messages), done.stderr[-2000:]


@pytest.mark.parametrize("name", cases.CASES)
def test_chromium_opens_the_report_without_console_messages_and_builds_the_page(tmp_path: Path, name: str) -> None:
    binary = chromium()
    report = tmp_path / "report.html"
    report.write_text(html_of(name), encoding="utf-8")
    done = run_browser(binary, report.as_uri(), tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    assert console_messages(done.stderr) == []
    dom = page(done.stdout)
    assert name.upper() in " ".join(dom.text)
    assert sum(1 for t, _ in dom.tags if t == "svg") >= 4
    assert sum(1 for t, _ in dom.tags if t == "table") >= 3

    shot = tmp_path / f"{name}.png"
    done = run_browser(
        binary, report.as_uri(), tmp_path / "profile-shot", "--hide-scrollbars", f"--screenshot={shot}", "--window-size=1100,2400"
    )
    assert done.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", done.stderr[-2000:]
    if os.environ.get("NVCRE_UPDATE_EVIDENCE_SCREENSHOTS") == "1":
        IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, IMAGES / f"evidence-report-{name}.png")
