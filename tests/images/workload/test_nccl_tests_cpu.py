"""The workload image's inputs against what the catalog renders, and the nccl-tests CPU stand-in's
own logic (flags, the size sweep, its table layout read by nvcre's parser), with no cluster: the
image carries every image name and every program path the catalog's MPI categories name."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
STANDIN = REPO / "images" / "workload" / "nccl_tests_cpu.py"
MPI_CATEGORIES = ("nccl-all-reduce", "nccl-alltoall", "nccl-all-gather")


def _standin() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nccl_tests_cpu", STANDIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("nccl_tests_cpu", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trainers(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The trainer of every MPI communication category, as the catalog renders it (onprem, h100)."""
    categories = "".join(f"  - domain: communication\n    variant: {v}\n    options: {{nodesPerJob: 2}}\n" for v in MPI_CATEGORIES)
    path = tmp_path_factory.mktemp("cert") / "cert.yaml"
    path.write_text(
        "apiVersion: nvcre.nvidia.com/v1alpha1\nkind: Certification\nmetadata: {name: mpi}\n"
        "spec:\n  target: {nodeSelector: {nvidia.com/gpu.present: 'true'}}\n  categories:\n" + categories
    )
    nvcrectl = str(Path(sys.executable).with_name("nvcrectl"))
    out = subprocess.run(
        [nvcrectl, "certification", "render", str(path), "--platform", "onprem", "--gpu-arch", "h100"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert len(docs) == len(MPI_CATEGORIES)
    return [dict(d["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]) for d in docs]


def test_the_image_carries_every_image_name_the_mpi_categories_render(trainers: list[dict[str, Any]]) -> None:
    from nvcre.testing.realnodes import workload_images

    assert {t["image"] for t in trainers} <= set(workload_images.references())


def test_every_program_the_rendered_mpi_line_runs_is_in_the_tools_layer(trainers: list[dict[str, Any]], tmp_path: Path) -> None:
    from nvcre.testing.realnodes import workload_images

    with tarfile.open(workload_images.tools_layer(tmp_path / "tools.tar")) as tar:
        members = {m.name: m for m in tar.getmembers()}
    for trainer in trainers:
        mpirun = trainer["command"][trainer["command"].index("timeout") + 2]
        assert members[mpirun.lstrip("/")].linkname == "/usr/bin/mpirun"
        # mpirun started by its full path starts <its prefix>/bin/orted on every host
        assert members[str(Path(mpirun).parent / "orted").lstrip("/")].linkname == "/usr/bin/orted"
        [program] = [arg for arg in trainer["args"] if arg.startswith("/")]
        link = members[program.lstrip("/")]
        assert link.issym() and link.linkname == "nccl-tests-cpu"
        assert members["usr/local/bin/nccl-tests-cpu"].mode == 0o755
    assert members["etc/openmpi/openmpi-mca-params.conf"].size > 0


def test_the_base_key_follows_the_package_list(monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.testing.realnodes import workload_images

    try:
        before = workload_images.base_key()
    except workload_images.ImageError as exc:
        pytest.skip(str(exc))
    listed = workload_images.packages()
    monkeypatch.setattr(workload_images, "packages", lambda: [*listed, "extra-package"])
    assert workload_images.base_key() != before


def test_the_standin_sweeps_sizes_and_reads_flags_as_nccl_tests_does() -> None:
    standin = _standin()
    opts = standin.parse_args(["-b", "8", "-e", "1M", "-f", "2", "-n", "5", "-N", "3", "-d", "double", "-o", "max"])
    assert (opts.iters, opts.cycles, opts.dtype, opts.op) == (5, 3, "double", "max")
    assert standin.sizes(opts) == [8 << k for k in range(18)]
    assert standin.sizes(standin.parse_args(["-b", "1K", "-e", "4K", "-i", "1K"])) == [1024, 2048, 3072, 4096]
    assert standin.sizes(standin.parse_args(["--minbytes=16G", "--maxbytes=16G"])) == [16 << 30]
    assert standin.collective_of("/usr/local/bin/all_reduce_perf_mpi") == "all_reduce"
    assert standin.collective_of("alltoall_perf") == "alltoall"
    assert standin.element_count("all_gather", 1000, 4, 4) == 248 and standin.element_count("all_reduce", 1000, 4, 4) == 250
    assert standin.bus_factor("all_reduce", 4) == 1.5 and standin.bus_factor("alltoall", 4) == 0.75
    for bad, message in ((["-x", "1"], "unknown option '-x'"), (["-e"], "-e needs a value"), (["-b", "2M", "-e", "1M"], "larger"),
                         (["-o", "xor"], "-o must be one of"), (["-t", "8"], "one thread per rank"),
                         (["-g", "0"], "-g must be between 1 and 64")):  # fmt: skip
        with pytest.raises(standin.UsageError, match=message):
            standin.parse_args(bad)


def test_g_devices_of_one_process_become_that_many_local_ranks_and_never_more_under_mpirun(tmp_path: Path) -> None:
    """A single-node loopback (``-g N``, no mpirun) starts N local ranks of the stand-in; each of them,
    and any rank mpirun started, then runs as is; ``-g N`` under someone else's mpirun is refused."""
    standin = _standin()
    mpirun = tmp_path / "mpirun"
    mpirun.write_text("#!/bin/sh\n")
    mpirun.chmod(0o755)
    args = ["-b", "8", "-e", "1M", "-g", "2"]
    opts = standin.parse_args(args)
    assert opts.devices == 2
    launch = standin.local_launch("/usr/local/bin/all_reduce_perf_mpi", args, opts, {"PATH": str(tmp_path)})
    assert launch == [str(mpirun), "--allow-run-as-root", "-np", "2", "--oversubscribe", "--bind-to", "none",
                      "-x", standin.DEVICES_ENV, "/usr/local/bin/all_reduce_perf_mpi", *args]  # fmt: skip
    own = {"PATH": str(tmp_path), "OMPI_COMM_WORLD_SIZE": "2", standin.DEVICES_ENV: "2"}
    assert standin.local_launch("all_reduce_perf_mpi", args, opts, own) is None
    assert standin.local_launch("all_reduce_perf_mpi", ["-g", "1"], standin.parse_args(["-g", "1"]), {"OMPI_COMM_WORLD_SIZE": "4"}) is None
    with pytest.raises(standin.UsageError, match="under mpirun the CPU stand-in drives one device per rank"):
        standin.local_launch("all_reduce_perf_mpi", args, opts, {"OMPI_COMM_WORLD_SIZE": "4"})
    with pytest.raises(standin.UsageError, match="no mpirun on PATH"):
        standin.local_launch("all_reduce_perf_mpi", args, opts, {"PATH": str(tmp_path / "none")})


def test_a_bad_flag_is_a_usage_message_and_exit_2_without_a_traceback(tmp_path: Path) -> None:
    program = tmp_path / "all_reduce_perf_mpi"
    program.symlink_to(STANDIN)
    done = subprocess.run([sys.executable, str(program), "-b", "8", "-q", "1"], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("all_reduce_perf_mpi: unknown option '-q'\nusage: all_reduce_perf_mpi [-b minbytes]")
    assert "Traceback" not in done.stderr


def test_the_standins_table_layout_is_read_by_nvcres_parser() -> None:
    from nvcre.runtime.measure.nccl import parse_bandwidth

    standin = _standin()
    rows = [
        standin.row_prefix(1024, 256, "float", "sum", -1)
        + standin.format_half(412.5, 0.0025, 0.0037, 0)
        + standin.format_half(400.0, 0.0026, 0.0038, 0),
        standin.row_prefix(1 << 20, 1 << 18, "float", "sum", -1)
        + standin.format_half(123456.0, 8.49, 12.74, 3)
        + standin.format_half(2e5, 5.24, 7.86, None),
    ]
    log = "\n".join([*standin.header_lines(), *rows, *standin.trailer_lines(3, [12.74, 7.86])])
    profile = yaml.safe_load((REPO / "catalog" / "logprofiles" / "nccl-bandwidth.yaml").read_text())
    parsed = parse_bandwidth(log, profile["spec"])
    assert [(r.size_bytes, r.alg_bw, r.bus_bw) for r in parsed.results] == [(1024, 0.0, 0.0), (1 << 20, 8.49, 12.74)]
    assert parsed.avg_bus_bandwidth == 10.3 and parsed.wrong_elements == 3
    assert parsed.failure is not None and parsed.failure.reason == "CollectiveDataCorrupted"


def test_the_archive_is_assembled_once_per_input_set_and_names_every_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib
    import json

    from nvcre.testing.realnodes import workload_images

    base = tmp_path / "workload-base-0123456789abcdef.tar"
    with tarfile.open(base, "w") as tar:
        tar.addfile(tarfile.TarInfo("etc/"))
    monkeypatch.setattr(workload_images, "images_dir", lambda: tmp_path)
    monkeypatch.setattr(workload_images, "build_base", lambda: base)
    monkeypatch.setattr(workload_images, "references", lambda: ["nvcr.io/nvidia/pytorch:26.01-py3", "example.org/other:1"])
    first = workload_images.workload_image()
    stamp = first.archive.stat().st_mtime_ns
    assert workload_images.workload_image().archive == first.archive and first.archive.stat().st_mtime_ns == stamp
    with tarfile.open(first.archive) as archive:
        [manifest] = json.loads(archive.extractfile("manifest.json").read())  # type: ignore[union-attr]
        config = json.loads(archive.extractfile(manifest["Config"]).read())  # type: ignore[union-attr]
        layers = [archive.extractfile(name).read() for name in manifest["Layers"]]  # type: ignore[union-attr]
    assert manifest["RepoTags"] == ["nvcr.io/nvidia/pytorch:26.01-py3", "example.org/other:1"]
    assert config["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(layer).hexdigest()}" for layer in layers]
    assert layers[0] == base.read_bytes() and config["config"]["Cmd"] == workload_images.CMD
    # another input set (here: one more reference) gives a new archive and drops the old one
    monkeypatch.setattr(workload_images, "references", lambda: ["nvcr.io/nvidia/pytorch:26.01-py3"])
    second = workload_images.workload_image()
    assert second.archive != first.archive and second.archive.is_file() and not first.archive.exists()
    assert base.is_file() and sorted(p.name for p in tmp_path.iterdir()) == sorted([base.name, second.archive.name])
