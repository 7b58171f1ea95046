"""Property: any Certification, however wrong, renders or fails with diagnostics — never an exception.

Documents are drawn from the real catalog keys and option names, with values that are sometimes
right, sometimes the wrong type, sometimes out of range, plus unknown fields and categories. A
successful render must also be byte-stable and every Workflow must name its category.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.render import render_certification

KEYS = load_catalog().keys()

junk = st.one_of(st.none(), st.booleans(), st.integers(-5, 200), st.text(max_size=8), st.lists(st.integers(), max_size=2))
small_int = st.one_of(st.integers(-1, 12), junk)
option_values = {
    "nodesPerJob": small_int,
    "gpusPerNode": small_int,
    "mlnxPerNode": small_int,
    "enableMNNVL": st.one_of(st.booleans(), junk),
    "enableCheckpoint": st.one_of(st.booleans(), junk),
    "maxSteps": small_int,
    "testScale": st.one_of(st.sampled_from(["full-scale", "intra-node", "intra-rack", "diagnose"]), junk),
    "image": st.one_of(st.just("registry.example.com/img:1"), junk),
    "imagePullSecrets": st.one_of(st.just([{"name": "regcred"}]), junk),
    "rdmaDeviceAccess": st.one_of(st.sampled_from(["hostPath", "devicePlugin"]), junk),
    "dcgmHost": st.one_of(st.just("dcgm.example.svc:5555"), junk),
    "sourceRepo": st.one_of(st.sampled_from(["https://git.example.com/m.git", "http://bad", "ssh://git@x/y.git"]), junk),
    "thresholds": st.one_of(st.just({"busBandwidthGBps": "value >= 1"}), st.just({"bogus": "x"}), junk),
    "env": st.one_of(
        st.lists(st.fixed_dictionaries({"name": st.sampled_from(["A", "NCCL_DEBUG", "B_2"]), "value": st.text(max_size=6)}), max_size=3),
        st.just([{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
        junk,
    ),
    "workloadMetadata": st.one_of(st.just({"labels": {"team": "a"}}), st.just({"labels": {"nvcre.nvidia.com/x": "y"}}), junk),
    "timeoutPerJob": st.one_of(st.sampled_from(["30m", "2h", "bad"]), junk),
    "unknownOption": junk,
}
options = st.fixed_dictionaries({}, optional=option_values)
category = st.one_of(
    st.builds(
        lambda key, opts: {"domain": key.split("/")[0], "variant": key.split("/")[1], **({"options": opts} if opts else {})},
        st.sampled_from(KEYS),
        options,
    ),
    st.fixed_dictionaries({"domain": st.sampled_from(["communication", "x"]), "variant": st.text(max_size=6)}),
)
spec = st.fixed_dictionaries(
    {"categories": st.lists(category, min_size=0, max_size=3)},
    optional={
        "target": st.one_of(st.just({}), st.just({"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}), junk),
        "gangScheduler": st.one_of(st.just({"schedulerName": "kai-scheduler"}), st.just({"queue": "q"}), junk),
        **{key: value for key, value in option_values.items() if key != "unknownOption"},
    },
)
valid_values = {
    "nodesPerJob": st.integers(1, 8),
    "gpusPerNode": st.sampled_from([2, 4, 8]),
    "mlnxPerNode": st.integers(0, 8),
    "enableMNNVL": st.booleans(),
    "enableCheckpoint": st.booleans(),
    "maxSteps": st.integers(1, 500),
    "testScale": st.sampled_from(["full-scale", "intra-node", "intra-rack", "diagnose"]),
    "image": st.just("registry.example.com/img:1"),
    "imagePullSecrets": st.just([{"name": "regcred"}]),
    "rdmaDeviceAccess": st.sampled_from(["hostPath", "devicePlugin"]),
    "dcgmHost": st.just("dcgm.example.svc:5555"),
    "sourceRepo": st.sampled_from(["https://git.example.com/m.git", "ssh://git@x/y.git"]),
    "thresholds": st.just({"busBandwidthGBps": "value >= 1"}),
    "env": st.lists(
        st.fixed_dictionaries({"name": st.sampled_from(["A", "NCCL_DEBUG", "B_2"]), "value": st.text(max_size=6)}),
        max_size=3,
        unique_by=lambda e: e["name"],
    ),
    "workloadMetadata": st.just({"labels": {"team": "a"}}),
}
valid_category = st.builds(
    lambda key, opts: {"domain": key.split("/")[0], "variant": key.split("/")[1], **({"options": opts} if opts else {})},
    st.sampled_from(KEYS),
    st.fixed_dictionaries({}, optional=valid_values),
)
valid_spec = st.fixed_dictionaries(
    {"target": st.just({}), "categories": st.lists(valid_category, min_size=1, max_size=3, unique_by=repr)},
    optional={"gangScheduler": st.just({"schedulerName": "kai-scheduler", "queue": "burn-in"}), **valid_values},
)
flags = st.tuples(
    st.sampled_from([None, "onprem", "aws", "oci", "nscale", "moon"]),
    st.sampled_from([None, "h100", "gb300", "b300", "NVIDIA GB200", "zz9"]),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec, flags, st.sampled_from(["cert", "a-very-long-certification-name-over-limits"]))
def test_render_never_raises_anything_but_compile_error(spec_doc: dict, flag: tuple, name: str) -> None:
    _render_or_clean_error(spec_doc, flag, name)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    valid_spec,
    st.tuples(
        st.sampled_from(["onprem", "aws", "gcp", "azure", "oci", "nscale", "mistral", "togetherai", "forge"]),
        st.sampled_from(["h100", "gb200", "gb300", "b200", "b300", "a100", "l40s", "rtxpro6000"]),
    ),
)
def test_plausible_certifications_render_or_explain(spec_doc: dict, flag: tuple) -> None:
    _render_or_clean_error(spec_doc, flag, "cert")


def _render_or_clean_error(spec_doc: dict, flag: tuple, name: str) -> None:
    document = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": name}, "spec": spec_doc}
    platform, arch = flag
    try:
        rendered = render_certification(document, platform=platform, gpu_arch=arch, check_purity=True)
    except CompileError as exc:
        assert exc.diagnostics and all(d.path is not None and d.message for d in exc.diagnostics)
        assert any(d.is_error for d in exc.diagnostics)
        return
    assert len(rendered.workflows) == len(spec_doc["categories"])
    again = render_certification(document, platform=platform, gpu_arch=arch)
    assert dump_yaml_stream(again.workflows) == dump_yaml_stream(rendered.workflows)
    for workflow, cat in zip(rendered.workflows, spec_doc["categories"]):
        assert workflow["metadata"]["labels"]["nvcre.nvidia.com/category-variant"] == cat["variant"]
        assert len(workflow["metadata"]["name"]) <= 31


# --- WorkloadRuns -------------------------------------------------------------------------------

frameworks = st.one_of(
    st.builds(
        lambda args, mpi_args: {
            "mpi": {
                "binary": "/opt/nccl-tests/build/all_reduce_perf",
                "mpirunPath": "/usr/local/mpi/bin/mpirun",
                "args": args,
                "mpiArgs": mpi_args,
            }
        },
        st.lists(st.sampled_from(["-b", "8", "-e", "8G", "-x", "-g"]), max_size=4),
        st.lists(st.sampled_from(["--bind-to", "none", "-x", "A"]), max_size=3),
    ),
    st.builds(lambda script: {"torch": {"script": script}}, st.sampled_from(["/config/train.py", "train.py"])),
    st.just({"exec": {"command": ["python", "-c", "print(1)"]}}),
    st.just({"torch": {"script": "a.py", "module": "b"}}),
)
volumes = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(["data", "dshm", "scratch", "config-volume"]), "emptyDir": st.just({})}), max_size=2
)
mounts = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["data", "scratch", "missing"]),
            "mountPath": st.sampled_from(["/data", "/dev/shm", "/config", "/scratch"]),
        }
    ),
    max_size=2,
)
workloadrun_spec = st.fixed_dictionaries(
    # mostly plausible values, sometimes junk, so both renders and refusals are exercised
    {"image": st.just("nvcr.io/nvidia/pytorch:26.01-py3"), "numNodes": st.integers(0, 6), "framework": frameworks},
    optional={
        "env": valid_values["env"],
        "orchestration": st.fixed_dictionaries(
            {},
            optional={
                "placement": st.sampled_from(["Pinned", "Unpinned", "Sideways"]),
                "testScale": st.sampled_from(["full-scale", "intra-node", "intra-rack", "diagnose"]),
                "repeatCount": st.integers(0, 3),
            },
        ),
        "volumes": volumes,
        "volumeMounts": mounts,
        "config": st.one_of(
            st.just({"inline": {"train.py": "print(1)"}}),
            st.just({"configMapRef": {"name": "cm"}}),
            st.just({"inline": {"a": "1"}, "configMapRef": {"name": "cm"}}),
        ),
        "gpusPerNode": st.sampled_from([1, 4, 8]),
        "imagePullSecrets": st.just([{"name": "regcred"}]),
        "gangScheduler": st.just({"schedulerName": "kai-scheduler"}),
        "enableMNNVL": st.booleans(),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    workloadrun_spec,
    st.one_of(
        flags, st.tuples(st.sampled_from(["onprem", "aws", "oci", "nscale", "gcp"]), st.sampled_from(["h100", "gb200", "gb300", "b200"]))
    ),
)
def test_workloadruns_render_or_explain(spec_doc: dict, flag: tuple) -> None:
    from nvcre.compiler.workloadrun import render_workloadrun

    document = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun", "metadata": {"name": "wr"}, "spec": spec_doc}
    try:
        rendered = render_workloadrun(document, platform=flag[0], gpu_arch=flag[1], check_purity=True)
    except CompileError as exc:
        assert any(d.is_error for d in exc.diagnostics) and all(d.message for d in exc.diagnostics)
        return
    assert len(rendered.workflows) == 1
    assert dump_yaml_stream(render_workloadrun(document, platform=flag[0], gpu_arch=flag[1]).workflows) == dump_yaml_stream(
        rendered.workflows
    )
