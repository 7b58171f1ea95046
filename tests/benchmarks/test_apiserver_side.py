"""The API server's side of the scale benchmark: reading kube-apiserver's ``/metrics`` and the
growth between two scrapes (benchmarks/apiserver_side.py).

``REAL`` is an excerpt of what kube-apiserver v1.36.3, built and started by the project's
simulated cluster with three nodes, served on ``/metrics`` (lines kept verbatim, families cut to
the ones the benchmark reads, and each family's ``# TYPE`` line kept). The "after" scrapes are that
text with counts raised by hand, which each test says.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import apiserver_side  # noqa: E402

REAL = """\
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="GET",version="v1"} 8
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="PATCH",version="v1"} 8
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="status",verb="PATCH",version="v1"} 7
# TYPE apiserver_response_sizes histogram
apiserver_response_sizes_bucket{component="apiserver",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1",le="1000"} 2
apiserver_response_sizes_bucket{component="apiserver",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1",le="10000"} 3
apiserver_response_sizes_bucket{component="apiserver",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1",le="100000"} 4
apiserver_response_sizes_bucket{component="apiserver",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1",le="1e+06"} 4
apiserver_response_sizes_bucket{component="apiserver",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1",le="1e+07"} 4
apiserver_response_sizes_bucket{component="apiserver",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1",le="1e+08"} 4
apiserver_response_sizes_bucket{component="apiserver",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1",le="1e+09"} 4
apiserver_response_sizes_bucket{component="apiserver",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1",le="+Inf"} 4
# TYPE apiserver_resource_objects gauge
apiserver_resource_objects{group="",resource="nodes"} 0
apiserver_resource_objects{group="",resource="pods"} 0
# TYPE apiserver_longrunning_requests gauge
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="cluster",subresource="",verb="WATCH",version="v1"} 2
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1"} 1
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="WATCH",version="v1"} 7
# TYPE apiserver_watch_events_total counter
apiserver_watch_events_total{group="",resource="configmaps",version="v1"} 41
# TYPE apiserver_cache_list_returned_objects_total counter
apiserver_cache_list_returned_objects_total{group="",resource="nodes"} 6
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 4.24890368e+08
"""

LIST_NODES = 'resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1"'


def _raised(text: str, line_start: str, value: str) -> str:
    """``text`` with the sample line that starts with ``line_start`` given ``value``."""
    out = []
    for line in text.splitlines():
        if line.startswith(line_start):
            line = line.rsplit(" ", 1)[0] + " " + value
        out.append(line)
    return "\n".join(out) + "\n"


def test_reads_requests_objects_watches_and_memory_of_a_real_scrape() -> None:
    scrape = apiserver_side.parse(REAL)
    assert scrape.requests[("LIST", "nodes")] == 4
    assert scrape.requests[("GET", "nodes")] == 8
    assert scrape.requests[("PATCH", "nodes")] == 8
    assert scrape.requests[("PATCH", "nodes/status")] == 7
    assert scrape.watches_open == 10  # 2 + 1 + 7 configmap watches, by scope
    assert scrape.watch_events == {"configmaps": 41}
    assert scrape.list_returned == {"nodes": 6}
    assert scrape.objects == {"nodes": 0, "pods": 0}
    assert scrape.resident_bytes == 424890368
    assert scrape.size_buckets[("LIST", "nodes")][100000.0] == 4
    assert scrape.size_buckets[("LIST", "nodes")][math.inf] == 4


def test_the_largest_answer_is_the_bucket_that_holds_every_answer_of_the_interval() -> None:
    before = apiserver_side.parse(REAL)
    # one more LIST of nodes during the scenario, between 1 MB and 10 MB
    text = REAL
    for le in ("1e+07", "1e+08", "1e+09", "+Inf"):
        text = _raised(text, f'apiserver_response_sizes_bucket{{component="apiserver",group="",{LIST_NODES},le="{le}"}}', "5")
    after = apiserver_side.parse(text)
    assert apiserver_side.largest_bound(after.size_buckets[("LIST", "nodes")], before.size_buckets[("LIST", "nodes")]) == 1e7
    # over the whole life of the server the largest was under 100 kB
    assert apiserver_side.largest_bound(before.size_buckets[("LIST", "nodes")], {}) == 100000.0
    # nothing answered in between: no bound
    assert apiserver_side.largest_bound(before.size_buckets[("LIST", "nodes")], before.size_buckets[("LIST", "nodes")]) is None


def test_summary_counts_growth_only_and_leaves_streams_out_of_the_largest_answers() -> None:
    before = apiserver_side.parse(REAL)
    text = _raised(REAL, 'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",' + LIST_NODES, "10")
    text = _raised(text, 'apiserver_resource_objects{group="",resource="pods"}', "120")
    text = _raised(text, 'apiserver_watch_events_total{group="",resource="configmaps"', "50")
    text = _raised(text, 'apiserver_cache_list_returned_objects_total{group="",resource="nodes"}', "26")
    watch = 'apiserver_response_sizes_bucket{component="apiserver",group="",resource="pods",scope="cluster",subresource="",verb="WATCH",version="v1",le="+Inf"} 3\n'
    after = apiserver_side.parse(text + watch)
    summary = apiserver_side.summarise(before, after, jobs=3)
    assert summary["requests"] == 6
    assert summary["requests_per_job"] == 2.0
    assert summary["requests_by_verb"] == {"LIST": 6}
    assert summary["lists_by_resource"] == {"nodes": 6}
    assert summary["objects_held"] == {"pods": 120}
    assert summary["objects_held_total"] == 120
    assert summary["watch_events_sent"] == 9
    assert summary["list_objects_returned"] == 20
    assert summary["watches_open"] == 10
    assert [a["request"] for a in summary["largest_answers"]] == []  # no LIST answered, a WATCH is a stream


def test_answers_with_an_error_are_counted_apart_by_code() -> None:
    before = apiserver_side.parse(REAL)
    conflict = (
        'apiserver_request_total{code="409",component="apiserver",dry_run="",group="",'
        'resource="nodes",scope="resource",subresource="status",verb="PATCH",version="v1"} 2\n'
    )
    after = apiserver_side.parse(REAL + conflict)
    assert after.requests[("PATCH", "nodes/status")] == 9  # 7 answered 200, 2 answered 409
    summary = apiserver_side.summarise(before, after, jobs=1)
    assert summary["errors_by_code"] == {"PATCH nodes/status 409": 2}
    assert summary["requests"] == 2


def test_uncountable_objects_are_left_out_and_the_old_name_is_read_when_alone() -> None:
    text = (
        "# TYPE apiserver_storage_objects gauge\n"
        'apiserver_storage_objects{resource="jobs.batch"} 250\n'
        'apiserver_storage_objects{resource="nodes"} -1\n'
    )
    assert apiserver_side.parse(text).objects == {"jobs.batch": 250}
