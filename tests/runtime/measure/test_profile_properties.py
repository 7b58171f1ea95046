"""Property tests: truncated, garbled and interleaved logs never raise and never yield a number
that was not in an intact row."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.dcgm import parse_dcgm
from nvcre.runtime.measure.nccl import parse_bandwidth
from nvcre.runtime.measure.training import parse_training

PROFILES = {p["metadata"]["name"]: p for p in builtin_logprofiles()}
NCCL = PROFILES["nccl-bandwidth"]
MEGATRON = PROFILES["megatron-training"]

sizes = st.sampled_from([8, 1024, 65536, 1048576, 33554432, 1073741824, 17179869184])
bandwidths = st.floats(min_value=0, max_value=2000, allow_nan=False).map(lambda v: round(v, 2))


@st.composite
def rows(draw: st.DrawFn) -> tuple[int, float, float, str]:
    size, alg, bus = draw(sizes), draw(bandwidths), draw(bandwidths)
    stamp = draw(st.sampled_from(["", "2026-03-01T10:00:00.123456789Z ", "2026-03-01T03:00:00-07:00 "]))
    line = f"{stamp}{size:>12} {size // 4:>13}     float     sum      -1   123.45 {alg:>7.2f} {bus:>7.2f}       0   122.10 {alg:>7.2f} {bus:>7.2f}       0"
    return size, alg, bus, line


noise = st.sampled_from(
    [
        "node-0:1:1 [0] NCCL INFO Using network IB",
        "2026-03-01T10:00:00Z node-0:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via NET/Socket/0",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong",
        "Warning: Permanently added 'node-1' (ED25519) to the list of known hosts.",
        "# Avg bus bandwidth    : 12.5",
        "",
    ]
)


def _damage(line: str, cut: int, junk: str) -> str:
    return line[: max(0, min(cut, len(line)))] + junk


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(rows(), st.integers(0, 200), st.sampled_from(["", "x", "node-1:2:2 [1] NCCL", "\x00\x1b[2J", "١٢٣"]), st.booleans()),
        max_size=30,
    ),
    st.lists(noise, max_size=10),
    st.randoms(use_true_random=False),
)
def test_damaged_logs_only_yield_intact_rows(entries, noises, rnd) -> None:
    lines: list[str] = []
    intact: dict[int, list[tuple[float, float]]] = {}
    for (size, alg, bus, line), cut, junk, damaged in entries:
        if damaged:
            lines.append(_damage(line, cut, junk))
        else:
            lines.append(line)
        intact.setdefault(size, []).append((alg, bus))
    lines.extend(noises)
    rnd.shuffle(lines)
    parsed = parse_bandwidth("\n".join(lines), NCCL)
    for row in parsed.results:
        assert row.size_bytes in intact
        algs = [a for a, _ in intact[row.size_bytes]]
        buses = [b for _, b in intact[row.size_bytes]]
        # an average of real values lies within their range (damaged rows that still parse are complete rows)
        assert min(algs) - 0.01 <= row.alg_bw <= max(algs) + 0.01
        assert min(buses) - 0.01 <= row.bus_bw <= max(buses) + 0.01
        assert row.samples <= len(intact[row.size_bytes])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=2000))
def test_arbitrary_text_never_raises(text: str) -> None:
    parse_bandwidth(text, NCCL)
    parse_training(text, MEGATRON)
    parse_dcgm(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 10**6), max_size=20), st.integers(0, 300), st.text(max_size=5))
def test_truncated_training_lines_keep_complete_steps_only(iterations, cut, junk) -> None:
    lines = [
        f"[2026-03-01 12:00:{i % 60:02d}.000000] iteration {it}/ 1000000 | elapsed time per iteration (ms): 2850.5 "
        f"| throughput per GPU (TFLOP/s/GPU): 539.8 | lm loss: 7.312500E+00 |"
        for i, it in enumerate(iterations)
    ]
    if lines:
        lines[-1] = lines[-1][:cut] + junk
    parsed = parse_training("\n".join(lines), MEGATRON)
    for step in parsed.steps:
        assert step.iteration in iterations
        assert step.elapsed_time == 2.8505
        # the throughput field is optional (a run without --log-throughput has none); when read,
        # its closing bar proves it whole
        assert step.tflops in (None, 539.8)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            rows().map(lambda r: r[3]),
            noise,
            st.text(alphabet=st.sampled_from(list(" \t\r0123456789.-T:Zabc#\n")), max_size=80),
        ),
        max_size=25,
    )
)
def test_rows_read_by_re2_equal_those_of_a_backtracking_engine(lines) -> None:
    """RE2 runs the profile pattern; on ordinary lines it must find what Python's engine finds."""
    import re

    from nvcre.runtime.measure.nccl import _Rows, _scan_rows
    from nvcre.runtime.measure.profile import compile_pattern

    text = "\n".join(lines)
    regex = NCCL["spec"]["patterns"]["bandwidthResult"]["regex"]
    on_re2, on_re = _Rows(), _Rows()
    _scan_rows(text, compile_pattern(regex, "bandwidthResult"), on_re2)
    _scan_rows(text, re.compile(regex, re.ASCII), on_re)
    assert on_re2.results() == on_re.results() and on_re2.count == on_re.count
