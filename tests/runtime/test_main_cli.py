"""The controller's command line: bad flags are one line on stderr and exit code 2."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from nvcre.cli.controller import app
from nvcre.runtime.endpoint.serve import parse_address
from nvcre.runtime.main import OptionError, Options


def test_bind_addresses_parse_or_disable():
    assert parse_address("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_address(":9090") == ("127.0.0.1", 9090)
    assert parse_address("0") is None
    for bad in ("localhost", "host:http", "host:70000"):
        try:
            parse_address(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} accepted")


def test_options_name_the_flag_at_fault():
    try:
        Options(health_probe_bind_address="nowhere").check()
    except OptionError as exc:
        assert str(exc).startswith("--health-probe-bind-address: ")
    else:
        raise AssertionError("a bad address was accepted")
    try:
        Options(workers=0).check()
    except OptionError as exc:
        assert str(exc) == "--workers: must be at least 1"
    else:
        raise AssertionError("zero workers accepted")


def test_the_typer_command_exits_2_on_a_bad_flag_without_a_traceback():
    result = CliRunner().invoke(app, ["--metrics-bind-address", "nope"])
    assert result.exit_code == 2
    assert "--metrics-bind-address" in result.output
    assert "Traceback" not in result.output


def test_python_dash_m_exits_2_on_a_bad_flag():
    done = subprocess.run([sys.executable, "-m", "nvcre.runtime", "--log-level", "loud"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == "error: --log-level: one of debug, info, warning, error"
    assert done.stdout == ""
