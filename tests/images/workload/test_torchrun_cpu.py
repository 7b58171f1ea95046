"""The training stand-ins of the workload image, with no cluster: ``torchrun`` (its options, the
Trainer's ``PET_*`` variables, the workers' environment, refusals) on the host's Python, and a
real two-node run of ``torchrun`` + ``pretrain_gpt.py`` inside the image's own root filesystem
(which has NumPy), in a network namespace of the test's own with only its loopback: Megatron's
lines, a falling loss, measured times, and the refusals of what it does not model."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]
TORCHRUN = REPO / "images" / "workload" / "torchrun_cpu.py"
MEGATRON = REPO / "images" / "workload" / "megatron_cpu.py"
#: what the catalog's train.sh passes for nemotron5-8b on h100 with 2 nodes x 2 GPUs (the shape
#: and parallelism options; the rest are accepted and change nothing here)
TRAIN_ARGS = (
    "--use-mcore-models --attention-backend flash --num-layers 32 --hidden-size 4096 --ffn-hidden-size 21504 "
    "--num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128 --seq-length 8192 "
    "--max-position-embeddings 8192 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 1 --sequence-parallel "
    "--micro-batch-size 1 --global-batch-size 4 --train-iters {iters} --eval-interval {iters} --eval-iters 1 --lr 6e-4 "
    "--min-lr 6e-6 --lr-decay-style cosine --lr-decay-iters 1830030 --lr-warmup-iters 5 --weight-decay 0.1 --clip-grad 1.0 "
    "--adam-beta1 0.9 --adam-beta2 0.95 --bf16 --init-method-std 0.014 --vocab-size 131072 --log-interval 10 "
    "--distributed-timeout-minutes 1 --mock-data --tokenizer-type NullTokenizer --log-throughput"
)


def _torchrun() -> ModuleType:
    spec = importlib.util.spec_from_file_location("torchrun_cpu", TORCHRUN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("torchrun_cpu", module)
    spec.loader.exec_module(module)
    return module


def test_torchrun_takes_the_trainers_pet_variables_and_gives_each_worker_its_rank() -> None:
    torchrun = _torchrun()
    environ = {
        "PET_NNODES": "2",
        "PET_NPROC_PER_NODE": "3",
        "PET_NODE_RANK": "1",
        "PET_MASTER_ADDR": "job-node-0-0.job",
        "PET_MASTER_PORT": "29400",
    }
    options, command = torchrun.parse(["--nnodes", "2", "--nproc-per-node", "3", "/w/pretrain_gpt.py", "--lr", "1"], environ)
    assert command == ["/w/pretrain_gpt.py", "--lr", "1"]
    workers = torchrun.worker_environments(options, environ)
    assert [(w["RANK"], w["LOCAL_RANK"]) for w in workers] == [("3", "0"), ("4", "1"), ("5", "2")]
    assert {(w["WORLD_SIZE"], w["LOCAL_WORLD_SIZE"], w["GROUP_RANK"], w["MASTER_ADDR"], w["MASTER_PORT"]) for w in workers} == {
        ("6", "3", "1", "job-node-0-0.job", "29400")
    }
    # An option on the command line wins over its PET_ variable; -m runs a module.
    options, command = torchrun.parse(["--node_rank=0", "-m", "pkg.main", "x"], environ)
    assert options["node_rank"] == "0" and command == ["-m", "pkg.main", "x"]


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        (["--standalone", "s.py"], {}, "unsupported option '--standalone'"),
        (["--nnodes"], {}, "--nnodes needs a value"),
        (["--nproc-per-node", "2"], {}, "no training script given"),
        (["s.py"], {"PET_NNODES": "1:4"}, "--nnodes must be a whole number"),
        (["s.py"], {"PET_NNODES": "2", "PET_NODE_RANK": "2"}, "--node-rank 2 is outside --nnodes 2"),
        (["--max-restarts", "3", "s.py"], {}, "only --max-restarts 0"),
    ],
)
def test_torchrun_refuses_what_it_cannot_do_with_exit_2_and_a_usage_line(argv: list[str], environ: dict[str, str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, str(TORCHRUN), *argv],
        env={"PATH": os.environ.get("PATH", ""), **environ},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and message in done.stderr and "usage: torchrun" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_torchrun_stops_the_other_workers_and_fails_when_one_fails(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text("import os, sys, time\nif os.environ['LOCAL_RANK'] == '1':\n    sys.exit(3)\ntime.sleep(60)\n")
    done = subprocess.run([sys.executable, str(TORCHRUN), "--nproc-per-node", "2", str(script)], capture_output=True, text=True, timeout=40)
    assert done.returncode == 1 and "worker rank 1 (local rank 1) failed with exit code 3" in done.stderr, done.stderr


@pytest.fixture(scope="module")
def image_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The workload image's base layer unpacked (it has Python and NumPy), with the two stand-ins."""
    from nvcre.testing.realnodes import workload_images

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("runs the stand-ins in the image's root filesystem: needs root and unshare")
    try:
        built = workload_images.cached()
        base = workload_images.build_base() if built else None
    except workload_images.ImageError as exc:
        pytest.skip(f"the workload image's base is not available: {exc}")
    if base is None:
        pytest.skip("the workload image's base is not built (python -m nvcre.testing.realnodes.workload_images)")
    root = tmp_path_factory.mktemp("image-root")
    with tarfile.open(base) as tar:
        tar.extractall(root, filter="fully_trusted")  # noqa: S202 - our own build's layer
    (root / "opt" / "t").mkdir(parents=True)
    shutil.copy(TORCHRUN, root / "opt" / "t" / "torchrun")
    shutil.copy(MEGATRON, root / "opt" / "t" / "pretrain_gpt.py")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _two_nodes(root: Path, args: str) -> tuple[int, str, str]:
    """Both nodes' torchrun (2 workers each) in one fresh network namespace: (exit, node 0's output, node 1's)."""
    script = (
        "ip link set lo up\n"
        "export PET_NNODES=2 PET_NPROC_PER_NODE=2 PET_MASTER_ADDR=127.0.0.1 PET_MASTER_PORT=29500\n"
        f"PET_NODE_RANK=0 python3 /opt/t/torchrun /opt/t/pretrain_gpt.py {args} >/opt/t/n0.log 2>&1 & first=$!\n"
        f"PET_NODE_RANK=1 python3 /opt/t/torchrun /opt/t/pretrain_gpt.py {args} >/opt/t/n1.log 2>&1; second=$?\n"
        "wait $first; first=$?\nexit $(( first > second ? first : second ))\n"
    )
    done = subprocess.run(
        ["unshare", "--net", "--mount", "--pid", "--fork", "chroot", str(root), "sh", "-c", script], timeout=240, check=False
    )
    return done.returncode, (root / "opt/t/n0.log").read_text(), (root / "opt/t/n1.log").read_text()


@pytest.mark.slow
def test_two_nodes_train_for_real_and_log_megatron_lines_that_nvcre_reads(image_root: Path) -> None:
    from nvcre.compiler.logprofiles import builtin_logprofiles
    from nvcre.runtime.measure.training import parse_training

    code, first, last = _two_nodes(image_root, TRAIN_ARGS.format(iters=40))
    assert code == 0, (first, last)
    assert "using world size: 4, data-parallel size: 2, context-parallel size: 1," in first and " iteration " not in first
    assert "tensor-model-parallel size: 2, pipeline-model-parallel size: 1" in first
    [profile] = [p for p in builtin_logprofiles() if p["metadata"]["name"] == "megatron-training"]
    parsed = parse_training(last, profile)
    assert [s.iteration for s in parsed.steps] == [10, 20, 30, 40], last
    assert parsed.application_start is None  # the start line is the first rank's, as in Megatron
    assert all(s.timestamp is not None and s.elapsed_time > 0 and (s.tflops or 0) > 0 for s in parsed.steps)
    losses = [s.loss or 0.0 for s in parsed.steps]
    assert losses[-1] < losses[0] < 5.6, losses  # from about ln(256) down
    assert "validation loss at iteration 40" in last


@pytest.mark.slow
def test_a_killed_rank_fails_every_node_at_once_instead_of_hanging(image_root: Path) -> None:
    """SIGKILL to one worker mid-training: its node's torchrun stops its other worker and fails,
    and the other node's ranks see the closed connections and fail too, long before the timeout."""
    args = TRAIN_ARGS.format(iters=100000)
    script = (
        "ip link set lo up && mount -t proc proc /proc\n"
        "export PET_NNODES=2 PET_NPROC_PER_NODE=2 PET_MASTER_ADDR=127.0.0.1 PET_MASTER_PORT=29500\n"
        f"PET_NODE_RANK=0 python3 /opt/t/torchrun /opt/t/pretrain_gpt.py {args} >/opt/t/k0.log 2>&1 & first=$!\n"
        f"PET_NODE_RANK=1 python3 /opt/t/torchrun /opt/t/pretrain_gpt.py {args} >/opt/t/k1.log 2>&1 & second=$!\n"
        "until grep -q ' iteration ' /opt/t/k1.log; do sleep 0.2; done\n"
        "for pid in $(ps -eo pid=,args= | awk '/pretrain_gpt/ && !/torchrun/ {print $1}'); do victim=$pid; done\n"
        "kill -9 $victim\n"
        "wait $first; a=$?; wait $second; b=$?\n"
        "echo codes $a $b\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        ["unshare", "--net", "--mount", "--pid", "--fork", "chroot", str(image_root), "sh", "-c", script],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    logs = (image_root / "opt/t/k0.log").read_text() + (image_root / "opt/t/k1.log").read_text()
    assert "codes 1 1" in done.stdout, (done.stdout, done.stderr, logs[-3000:])
    assert "failed with exit code -9" in logs and "the process group failed" in logs, logs[-3000:]
    assert "Traceback" not in logs and elapsed < 60, (elapsed, logs[-3000:])  # the timeout is 1 minute


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("--save /w/ckpt --save-interval 10", "checkpointing (--save) is not modelled"),
        ("--pipeline-model-parallel-size 2", "pipeline parallelism is not modelled"),
        ("--no-such-option", "unrecognized arguments: --no-such-option"),
    ],
)
def test_what_the_standin_does_not_model_is_refused_with_exit_2(image_root: Path, extra: str, message: str) -> None:
    code, first, last = _two_nodes(image_root, TRAIN_ARGS.format(iters=10) + " " + extra)
    assert code != 0 and message in first + last and "Traceback" not in first + last, (first, last)


def test_the_image_answers_every_name_the_training_categories_render(tmp_path: Path) -> None:
    """Both training entries render an image the archive carries; train.sh's ``python`` and
    ``torchrun``, and the Megatron-LM checkout the init container copies, are in the tools layer."""
    import yaml

    from nvcre.testing.realnodes import workload_images

    categories = "".join(
        f"  - domain: training\n    variant: {v}\n    options: {{nodesPerJob: 4, gpusPerNode: 8}}\n"
        for v in ("nemotron5-8b", "nemotron5-56b")
    )
    path = tmp_path / "cert.yaml"
    path.write_text(
        "apiVersion: nvcre.nvidia.com/v1alpha1\nkind: Certification\nmetadata: {name: train}\n"
        "spec:\n  target: {nodeSelector: {nvidia.com/gpu.present: 'true'}}\n  categories:\n" + categories
    )
    nvcrectl = str(Path(sys.executable).with_name("nvcrectl"))
    out = subprocess.run(
        [nvcrectl, "certification", "render", str(path), "--platform", "onprem", "--gpu-arch", "h100"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    workflows = [d for d in yaml.safe_load_all(out) if d]
    assert len(workflows) == 2
    trainers = [w["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"] for w in workflows]
    assert {t["image"] for t in trainers} <= set(workload_images.references())
    scripts = [d["data"]["train.sh"] for w in workflows for d in w["spec"]["dependencies"] if d["kind"] == "ConfigMap"]
    assert len(scripts) == 2 and all("python -m pip install" in s and "exec torchrun" in s for s in scripts)
    assert all('"$megatron/pretrain_gpt.py"' in s for s in scripts)
    with tarfile.open(workload_images.tools_layer(tmp_path / "tools.tar")) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert members["usr/local/bin/torchrun"].mode == 0o755 and members["usr/local/bin/python"].linkname == "/usr/bin/python3"
    assert members["opt/megatron-lm/pretrain_gpt.py"].size > 0 and members["opt/megatron-lm/pyproject.toml"].size > 0
    assert members["etc/pip.conf"].size > 0
