"""Hides credentials in text that is shown to people: the user-info part of URLs.

A ``sourceRepo`` such as ``https://user:TOKEN@git.example.com/m.git`` is valid input and is
rendered into the workload as given (the clone script scrubs it from its own output), but the
review commands print what they compare: ``certification images`` and ``certification diff``
(text, markdown for pull-request comments, JSON) show such a URL as
``https://***@git.example.com/m.git``. The user-info between ``//`` and ``@`` is replaced when
it can hold a secret: always for HTTP(S), where a token alone is a credential, and for any other
scheme when it carries a password (``user:secret``). A plain SSH user such as ``git@`` stays, and
nothing else in the text changes.

An evidence bundle is handed to people who cannot see the cluster and is signed, so a
credential in it could never be taken out again: every file of a bundle is redacted before it is
digested. Data (a Workflow, a predicate) goes through :func:`redact_value`; finished HTML and
XML through :func:`redact_markup`, whose user-info never spans a quote or an angle bracket, so
it cannot reach across an attribute or a tag of the markup around it.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REDACTED", "redact_markup", "redact_text", "redact_value"]

REDACTED = "***"
#: scheme://userinfo@ where userinfo holds no '/', '@' or white space
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]{0,31}://)(?P<userinfo>[^/@\s]{1,2048})@")
#: the same inside escaped markup: a quote or an angle bracket ends the user-info (escaped text holds none)
_MARKUP_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]{0,31}://)(?P<userinfo>[^/@\s\"<>]{1,2048})@")


def redact_text(text: str) -> str:
    """``text`` with the user-info of every URL in it replaced by ``***``."""
    if "@" not in text or "://" not in text:
        return text
    return _USERINFO.sub(_hide, text)


def redact_markup(text: str) -> str:
    """HTML or XML ``text`` with the user-info of every URL in its escaped text replaced by ``***``."""
    if "@" not in text or "://" not in text:
        return text
    return _MARKUP_USERINFO.sub(_hide, text)


def _hide(match: re.Match[str]) -> str:
    scheme = match.group("scheme")
    userinfo = match.group("userinfo")
    if ":" in userinfo or scheme.lower().startswith("http"):
        return f"{scheme}{REDACTED}@"
    return match.group(0)


def redact_value(value: Any) -> Any:
    """A copy of plain data (dicts, lists, strings) with every string passed through ``redact_text``."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    if isinstance(value, tuple):
        return tuple(redact_value(item) for item in value)
    return value
