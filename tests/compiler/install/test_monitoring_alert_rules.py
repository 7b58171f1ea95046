"""The shipped alert rules: NVCRE's names and expressions, our additions explained, and promtool's
``check rules`` and ``test rules`` (tests/rules/*.yaml) on the very file the install ships.

promtool comes from the Prometheus build of testing/gobuild/build.py (``--tools-only --tools
prometheus``; built here when Go is there). Without it and without Go the promtool tests skip,
except under CI=true, where they fail.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.install.monitoring import ALERT_RULES_FILE, alert_rule_groups
from tests.gotools import go_tool

REPO = Path(__file__).resolve().parents[3]
RULE_TESTS = sorted((REPO / "tests" / "rules").glob("*_test.yaml"))

#: NVCRE's documented rules: name -> (expression, for, severity).
NVCRE_RULES = {
    "NVCREHardwareFailure": ("nvcre_job_failed_nodes > 0", "1m", "warning"),
    "NVCREHighHardwareFailureRate": ("sum(rate(nvcre_hardware_failures_detected_total[1h])) by (namespace) > 0.5", "10m", "critical"),
    "NVCREJobStuck": ('nvcre_job_status{status="in_progress"} == 1', "6h", "warning"),
    "NVCRELowGoodput": ("nvcre_goodput_ratio > 0 and nvcre_goodput_ratio < 0.5", "5m", "warning"),
    "NVCREHighReconcileLatency": (
        "histogram_quantile(0.95, sum by (le) (rate(nvcre_reconcile_duration_seconds_bucket[5m]))) > 5",
        "10m",
        "warning",
    ),
    "NVCREReconcileErrors": (
        'sum(rate(nvcre_reconcile_total{result="error"}[5m])) / sum(rate(nvcre_reconcile_total[5m])) > 0.1',
        "5m",
        "warning",
    ),
}


def _rules() -> dict[str, dict[str, Any]]:
    return {rule["alert"]: {**rule, "group": group["name"]} for group in alert_rule_groups() for rule in group["rules"]}


def test_every_nvcre_rule_is_shipped_under_its_name_with_its_values() -> None:
    rules = _rules()
    for name, (expr, duration, severity) in NVCRE_RULES.items():
        rule = rules[name]
        assert (rule["group"], " ".join(rule["expr"].split()), rule["for"], rule["labels"]["severity"]) == (
            "nvcre",
            expr,
            duration,
            severity,
        )
        assert rule["annotations"]["summary"]


def test_each_added_rule_says_why_nvcre_lacks_it() -> None:
    added = {name: rule for name, rule in _rules().items() if name not in NVCRE_RULES}
    assert added, "the burn-in additions are part of the file"
    for name, rule in added.items():
        assert rule["group"] == "nvcre-burn-in", name
        assert name.startswith("NVCRE") and "NVCRE" in rule["annotations"]["rationale"], name
        assert rule["labels"]["severity"] in ("warning", "critical"), name


def test_every_rule_has_a_promtool_unit_test() -> None:
    tested = "".join(path.read_text() for path in RULE_TESTS)
    for name in _rules():
        assert f"alertname: {name}\n" in tested, f"{name} has no case in tests/rules"


@pytest.fixture(scope="module")
def promtool(request: pytest.FixtureRequest) -> Path:
    return go_tool(request, "prometheus", "promtool")


def _run(promtool: Path, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([str(promtool), *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def test_promtool_check_rules(promtool: Path) -> None:
    checked = _run(promtool, "check", "rules", str(ALERT_RULES_FILE))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in checked.stdout


def test_promtool_test_rules(promtool: Path) -> None:
    assert RULE_TESTS
    for path in RULE_TESTS:
        tested = _run(promtool, "test", "rules", path.name, cwd=path.parent)
        assert tested.returncode == 0, tested.stdout + tested.stderr


def test_promtool_unit_tests_can_fail(promtool: Path, tmp_path: Path) -> None:
    """A wrong expectation is reported as a failure, so a passing run means the rules behave as written."""
    wrong = tmp_path / "wrong_test.yaml"
    wrong.write_text(
        f"rule_files: [{ALERT_RULES_FILE}]\n"
        "tests:\n"
        "  - interval: 1m\n"
        "    input_series:\n"
        '      - series: \'nvcre_job_failed_nodes{namespace="a",job="j",workflow="w"}\'\n'
        "        values: '0x10'\n"
        "    alert_rule_test:\n"
        "      - eval_time: 5m\n"
        "        alertname: NVCREHardwareFailure\n"
        "        exp_alerts: [{exp_labels: {severity: warning, namespace: a, job: j, workflow: w}}]\n"
    )
    failed = _run(promtool, "test", "rules", str(wrong))
    assert failed.returncode != 0 and "NVCREHardwareFailure" in failed.stdout + failed.stderr
