"""Log calls never pass ``extra=`` keys that a LogRecord already owns.

``logging`` raises ``KeyError("Attempt to overwrite 'message' in LogRecord")`` for such a key,
but only when a handler is enabled for the record's level: a controller run with INFO logging
(as ``python -m nvcre.runtime`` runs it) fails where a quiet test run does not. This check reads
every module's source, so it fails at the offending line whatever level the tests log at.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("pkg", "compiler", "runtime", "cli", "testing", "catalog", "platforms")
LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}

#: Every attribute a fresh LogRecord has, plus the two ``logging`` refuses on its own.
RESERVED = frozenset(vars(logging.LogRecord("n", logging.INFO, "p", 1, "m", None, None))) | {"message", "asctime"}


def clashing_keys(source: str, filename: str) -> list[str]:
    """``file:line: key`` for every literal ``extra=`` key of a log call that clashes."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in LOG_METHODS:
            continue
        for keyword in node.keywords:
            if keyword.arg != "extra" or not isinstance(keyword.value, ast.Dict):
                continue
            for key in keyword.value.keys:
                if isinstance(key, ast.Constant) and key.value in RESERVED:
                    found.append(f"{filename}:{key.lineno}: {key.value}")
    return found


def test_no_log_call_overwrites_a_logrecord_attribute() -> None:
    problems = []
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            problems += clashing_keys(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    assert problems == [], "log extra= keys that LogRecord owns:\n" + "\n".join(problems)


def test_the_check_finds_a_clash() -> None:
    source = 'log.info("done", extra={"workflow": "w", "message": "m"})\nlog.info("ok", extra={"diagnosis": "d"})\n'
    assert clashing_keys(source, "x.py") == ["x.py:1: message"]


def test_the_reserved_set_matches_what_logging_refuses() -> None:
    logger = logging.getLogger("nvcre.test.extra")
    for key in ("message", "levelname", "msg", "args"):
        assert key in RESERVED
        try:
            logger.makeRecord("n", logging.INFO, "p", 1, "m", None, None, extra={key: 1})
        except KeyError:
            continue
        raise AssertionError(f"logging accepted {key}")
