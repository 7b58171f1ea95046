"""merge_env: user env lands as -x pairs for MPI entries and as trainer env for the others."""

from __future__ import annotations

import copy

import pytest

from nvcre.compiler.mpi_args import NoForwardAnchor, drop_forwarded, forwarded_names, set_forwarded
from nvcre.compiler.passes.merge_env import merge_env
from nvcre.compiler.unit import ClusterView, Context, EntryInfo, Unit
from nvcre.compiler.yamlio import load_file
from tests.passkit import FIXTURES

ENTRIES = {
    "mpi-all-reduce": EntryInfo("communication", "nccl-all-reduce", "mpi", launcher_job="launcher"),
    "loopback": EntryInfo("communication", "nccl-loopback", "single"),
    "nemotron5-8b": EntryInfo("training", "nemotron5-8b", "torch"),
}
CAT_PATH = "spec.categories[2]"


def render(fixture: str, env: list | None, workflow: dict | None = None, source_kind: str = "Certification"):
    workflow = workflow if workflow is not None else load_file(FIXTURES / f"{fixture}.yaml")[0]
    path = "spec" if source_kind == "WorkloadRun" else CAT_PATH
    ctx = Context(source_kind, "demo", {}, ENTRIES[fixture], ClusterView("onprem", "h100"), path)
    options = {} if env is None else {"env": env}
    return Unit(category={}, options=options, workflow=workflow), ctx


def trainer_of(unit: Unit) -> dict:
    return unit.workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]


def env(*pairs: tuple[str, str]) -> list[dict]:
    return [{"name": name, "value": value} for name, value in pairs]


# -- mpi_args ---------------------------------------------------------------------------------


def test_forwarded_names_lists_pairs_in_order_with_repeats():
    args = ["-N", "8", "-x", "A=1", "-x", "B", "bin", "-x", "A=2", "-x"]
    assert forwarded_names(args) == ["A", "B", "A"]


def test_set_forwarded_is_pure_and_keeps_order():
    args = ["-x", "A=1", "bin"]
    out = set_forwarded(args, "B", "2")
    out = set_forwarded(out, "C", None)
    assert args == ["-x", "A=1", "bin"]
    assert out == ["-x", "A=1", "-x", "B=2", "-x", "C", "bin"]
    assert set_forwarded(out, "C", "3") == ["-x", "A=1", "-x", "B=2", "-x", "C=3", "bin"]


def test_set_forwarded_without_anchor_raises():
    with pytest.raises(NoForwardAnchor):
        set_forwarded(["-N", "8", "bin"], "A", "1")


def test_drop_forwarded_removes_every_pair_of_the_name():
    assert drop_forwarded(["-x", "A=1", "-x", "B", "-x", "A", "bin"], "A") == ["-x", "B", "bin"]


# -- MPI entries ------------------------------------------------------------------------------


def test_mpi_new_names_go_after_the_last_pair_in_order():
    unit, ctx = render("mpi-all-reduce", env(("NCCL_IB_HCA", "mlx5_0,mlx5_1"), ("NCCL_NVLS_ENABLE", "0")))
    out, diags = merge_env(unit, ctx)
    assert diags == []
    args = trainer_of(out)["args"]
    anchor = args.index("LD_LIBRARY_PATH")
    assert args[anchor + 1 : anchor + 6] == [
        "-x",
        "NCCL_IB_HCA=mlx5_0,mlx5_1",
        "-x",
        "NCCL_NVLS_ENABLE=0",
        "/usr/local/bin/all_reduce_perf_mpi",
    ]
    assert "env" not in trainer_of(out)


def test_mpi_forwarded_name_is_replaced_in_place():
    unit, ctx = render("mpi-all-reduce", env(("NCCL_DEBUG", "WARN"), ("LD_LIBRARY_PATH", "/opt/lib")))
    before = trainer_of(unit)["args"]
    out, diags = merge_env(unit, ctx)
    assert diags == []
    args = trainer_of(out)["args"]
    assert len(args) == len(before)
    assert args[before.index("NCCL_DEBUG=INFO")] == "NCCL_DEBUG=WARN"
    assert args[before.index("LD_LIBRARY_PATH")] == "LD_LIBRARY_PATH=/opt/lib"
    assert forwarded_names(args) == forwarded_names(before)


def test_mpi_value_is_one_verbatim_argument():
    value = 'a b "c" $HOME;`x`'
    unit, ctx = render("mpi-all-reduce", env(("ODD", value)))
    out, _ = merge_env(unit, ctx)
    assert f"ODD={value}" in trainer_of(out)["args"]


def test_mpi_without_anchor_fails_naming_the_entry():
    unit, ctx = render("mpi-all-reduce", env(("A", "1")))
    spec = trainer_of(unit)
    spec["args"] = [arg for arg in spec["args"] if arg != "-x" and "=" not in arg and arg != "LD_LIBRARY_PATH"]
    out, diags = merge_env(unit, ctx)
    assert out is unit
    assert [d.code for d in diags] == ["MPIEnvAnchorMissing"]
    assert diags[0].path == f"{CAT_PATH}.options.env"
    assert "communication/nccl-all-reduce" in diags[0].message and "A" in diags[0].message


def pad_args(unit: Unit, total: int) -> None:
    args = trainer_of(unit)["args"]
    args.extend(["-v"] * (total - len(args)))
    assert len(args) == total


def test_mpi_over_128_args_fails_naming_entry_and_count():
    unit, ctx = render("mpi-all-reduce", env(*[(f"V{i}", str(i)) for i in range(32)]))
    pad_args(unit, 100)
    out, diags = merge_env(unit, ctx)
    assert out is unit
    assert [d.code for d in diags] == ["TrainerArgsLimit"]
    assert "communication/nccl-all-reduce" in diags[0].message
    assert "164" in diags[0].message and "128" in diags[0].message


def test_mpi_exactly_128_args_is_allowed():
    unit, ctx = render("mpi-all-reduce", env(("A", "1"), ("B", "2")))
    pad_args(unit, 124)
    out, diags = merge_env(unit, ctx)
    assert diags == []
    assert len(trainer_of(out)["args"]) == 128


# -- other entries ----------------------------------------------------------------------------


def test_trainer_env_replaces_by_name_else_appends():
    unit, ctx = render("loopback", env(("NCCL_DEBUG", "WARN"), ("NCCL_IB_HCA", "mlx5_0")))
    out, diags = merge_env(unit, ctx)
    assert diags == []
    names = [item["name"] for item in trainer_of(out)["env"]]
    assert names == ["NCCL_DEBUG", "NCCL_SHM_DISABLE", "NCCL_P2P_DISABLE", "NCCL_MNNVL_ENABLE", "NCCL_IB_HCA"]
    assert trainer_of(out)["env"][0] == {"name": "NCCL_DEBUG", "value": "WARN"}
    assert trainer_of(out)["env"][-1] == {"name": "NCCL_IB_HCA", "value": "mlx5_0"}
    assert trainer_of(out)["args"] == trainer_of(unit)["args"]


def test_trainer_env_created_when_the_catalog_sets_none():
    unit, ctx = render("nemotron5-8b", env(("TENSOR_PARALLELISM", "2")))
    out, diags = merge_env(unit, ctx)
    assert diags == []
    assert trainer_of(out)["env"] == [{"name": "TENSOR_PARALLELISM", "value": "2"}]


# -- no env, defensive checks, purity ---------------------------------------------------------


@pytest.mark.parametrize("fixture", sorted(ENTRIES))
@pytest.mark.parametrize("value", [None, []])
def test_no_env_leaves_the_unit_identical(fixture, value):
    unit, ctx = render(fixture, value)
    before = copy.deepcopy(unit.workflow)
    out, diags = merge_env(unit, ctx)
    assert out is unit and diags == []
    assert out.workflow == before


def test_more_than_32_entries_is_rechecked_with_the_category_path():
    unit, ctx = render("loopback", env(*[(f"V{i}", "x") for i in range(33)]))
    out, diags = merge_env(unit, ctx)
    assert out is unit
    assert [(d.code, d.path) for d in diags] == [("EnvEntryLimit", f"{CAT_PATH}.options.env")]


def test_workloadrun_paths_point_at_spec_env():
    unit, ctx = render("loopback", env(*[(f"V{i}", "x") for i in range(33)]), source_kind="WorkloadRun")
    _, diags = merge_env(unit, ctx)
    assert [(d.code, d.path) for d in diags] == [("EnvEntryLimit", "spec.env")]


def test_value_from_is_refused():
    unit, ctx = render("loopback", [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}])
    _, diags = merge_env(unit, ctx)
    assert [(d.code, d.path) for d in diags] == [("EnvValueFromUnsupported", f"{CAT_PATH}.options.env[0].valueFrom")]


@pytest.mark.parametrize("fixture", sorted(ENTRIES))
def test_input_unit_is_untouched(fixture):
    unit, ctx = render(fixture, env(("NCCL_DEBUG", "WARN"), ("NEW", "1")))
    snapshot = copy.deepcopy(unit)
    out, diags = merge_env(unit, ctx)
    assert diags == []
    assert unit == snapshot
    assert out.workflow != unit.workflow
