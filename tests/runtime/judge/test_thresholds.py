"""Threshold verdicts: NVCRE's reasons and messages, CEL compiled once, values from measurements."""

from __future__ import annotations

from nvcre.compiler.cel_program import compile_expression
from nvcre.runtime.judge.thresholds import bandwidth_is_final, evaluate, measured_values


def test_violation_names_the_key_value_and_expression() -> None:
    outcome = evaluate({"busBandwidthGBps": "value >= 900"}, {"busBandwidthGBps": 850.12345})
    assert (outcome.reason, outcome.failed) == ("ThresholdViolated", True)
    assert outcome.message == 'Threshold "busBandwidthGBps" violated: measured 850.1235, expression: value >= 900'


def test_int_literals_compare_with_double_values() -> None:
    outcome = evaluate(
        {"busBandwidthGBps": "value >= 900", "goodputRatio": "value > 0.5"}, {"busBandwidthGBps": 950.0, "goodputRatio": 0.9}
    )
    assert (outcome.reason, outcome.message, outcome.failed) == ("ThresholdsMet", "All performance thresholds satisfied", False)


def test_first_failure_in_sorted_key_order_is_reported() -> None:
    outcome = evaluate(
        {"busBandwidthGBps": "value >= 900", "algBandwidthGBps": "value >= 500"},
        {"busBandwidthGBps": 100.0, "algBandwidthGBps": 50.0},
    )
    assert outcome.key == "algBandwidthGBps"


def test_unknown_key_fails_before_waiting_for_data() -> None:
    outcome = evaluate({"busBW": "value > 1", "zeta": "true"}, {})
    assert outcome.reason == "UnknownThresholdKey" and outcome.failed
    assert outcome.message == (
        "unknown threshold key(s) [busBW, zeta]; valid keys: "
        "[busBandwidthGBps, algBandwidthGBps, goodputRatio, avgTFLOPsPerGPU, avgStepTimeSec]"
    )


def test_missing_data_waits_then_times_out() -> None:
    thresholds = {"goodputRatio": "value > 0.5", "avgStepTimeSec": "value < 3"}
    waiting = evaluate(thresholds, {})
    assert waiting.pending and not waiting.failed
    late = evaluate(thresholds, {}, measurement_timed_out=True, measurement_timeout="5m0s")
    assert late.reason == "MeasurementTimeout"
    assert late.message == "Measurement data not available within 5m0s for keys: [avgStepTimeSec goodputRatio]"


def test_bad_expressions_are_reported_not_raised() -> None:
    for expression in ("value >=", "value + 1", "value > 'a'"):
        outcome = evaluate({"busBandwidthGBps": expression}, {"busBandwidthGBps": 1.0})
        assert outcome.reason == "InvalidThresholdExpression", expression
        assert outcome.message.startswith('Threshold "busBandwidthGBps": ')


def test_without_thresholds_nothing_is_enforced() -> None:
    outcome = evaluate({}, {"busBandwidthGBps": 1.0})
    assert not outcome.enforced and not outcome.failed


def test_expressions_compile_once() -> None:
    compile_expression.cache_clear()
    for value in range(5):
        evaluate({"busBandwidthGBps": "value >= 2"}, {"busBandwidthGBps": float(value)})
    assert compile_expression.cache_info().misses == 1


def _bm(reason: str, results: list[dict]) -> dict:
    return {
        "kind": "BandwidthMeasurement",
        "status": {
            "results": results,
            "conditions": [
                {"type": "Complete", "status": "True", "reason": reason, "message": "", "lastTransitionTime": "2026-03-01T00:00:00Z"}
            ],
        },
    }


def test_values_come_from_final_measurements_only() -> None:
    rows = [
        {"sizeBytes": 8, "algBW": "0.01", "busBW": "9.50", "samples": 1},
        {"sizeBytes": 1 << 30, "algBW": "400.00", "busBW": "750.25", "samples": 2},
    ]
    final = _bm("JobSucceeded", rows)
    assert bandwidth_is_final(final)
    assert measured_values(final) == {"busBandwidthGBps": 750.25, "algBandwidthGBps": 400.0}
    assert measured_values(_bm("JobFailed", rows)) == {}
    assert measured_values(_bm("JobSucceeded", [])) == {}
    goodput = {
        "status": {
            "result": "0.91",
            "avgTFLOPSPerGPU": "0",
            "avgStepTimeSec": "2.85",
            "conditions": [{"type": "Complete", "status": "True", "reason": "JobSucceeded", "message": "", "lastTransitionTime": "x"}],
        }
    }
    # values of zero or less count as missing
    assert measured_values(goodput=goodput) == {"goodputRatio": 0.91, "avgStepTimeSec": 2.85}
