"""WorkloadRun rendering: one Workflow per run, each framework, placement, volumes, env and the CLI."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.api.validate import validate
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.emit import dump_yaml_stream
from nvcre.compiler.facts import load_facts
from nvcre.compiler.naming import truncate_name
from nvcre.compiler.overlays import load_overlays
from nvcre.compiler.workloadrun import WORKLOADRUN_PASSES, render_workloadrun
from nvcre.compiler.yamlio import load_documents, load_file

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures"
OVERLAYS = FIXTURES / "workloadrun-overlays"
NVCRECTL = [sys.executable, "-m", "nvcre.cli.main"]

MPI = {"binary": "/usr/local/bin/all_reduce_perf_mpi", "mpirunPath": "/usr/local/mpi/bin/mpirun"}
FRAMEWORKS = {
    "mpi": MPI,
    "torch": {"script": "/config/train.py"},
    "exec": {"command": ["/app/run"]},
}


# -- helpers ------------------------------------------------------------------------------------


def run_doc(framework: str = "mpi", name: str = "demo", **spec: Any) -> dict:
    body = {"image": "nvcr.io/nvidia/pytorch:26.01-py3", "numNodes": 2, "framework": {framework: FRAMEWORKS[framework]}}
    body.update(spec)
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun", "metadata": {"name": name}, "spec": body}


def render(doc: dict, gpu_arch: str = "h100", **kwargs: Any):
    kwargs.setdefault("platform", "onprem")
    return render_workloadrun(doc, gpu_arch=gpu_arch, check_purity=True, **kwargs)


def workflow_of(doc: dict, **kwargs: Any) -> dict:
    rendered = render(doc, **kwargs)
    assert len(rendered.workflows) == 1
    return rendered.workflows[0]


def errors_of(doc: dict, **kwargs: Any) -> list:
    with pytest.raises(CompileError) as caught:
        render(doc, **kwargs)
    return [d for d in caught.value.diagnostics if d.is_error]


def runtime(wf: dict) -> dict:
    return next(d for d in wf["spec"]["dependencies"] if d["kind"] == "TrainingRuntime")


def job(wf: dict, name: str) -> dict:
    jobs = runtime(wf)["spec"]["template"]["spec"]["replicatedJobs"]
    return next(j for j in jobs if j["name"] == name)


def pod(wf: dict, name: str = "node") -> dict:
    return job(wf, name)["template"]["spec"]["template"]["spec"]


def container(wf: dict, name: str = "node") -> dict:
    return pod(wf, name)["containers"][0]


def trainer(wf: dict) -> dict:
    return wf["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]


def mounts(c: dict) -> dict[str, dict]:
    return {m["name"]: m for m in c.get("volumeMounts", [])}


def volumes(p: dict) -> dict[str, dict]:
    return {v["name"]: v for v in p.get("volumes", [])}


def forwarded(args: list[str]) -> list[str]:
    return [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "-x"]


# -- the Workflow ---------------------------------------------------------------------------------


@pytest.mark.parametrize("framework", ["mpi", "torch", "exec"])
def test_one_workflow_named_and_labelled_after_the_run(framework):
    wf = workflow_of(run_doc(framework, name="my-run"))
    assert wf["kind"] == "Workflow" and wf["apiVersion"] == "nvcre.nvidia.com/v1alpha1"
    assert wf["metadata"]["name"] == "my-run"
    assert wf["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "nvcre",
        "nvcre.nvidia.com/workloadrun": "my-run",
        "nvcre.nvidia.com/workload-run": "my-run",  # NVCRE's selector
    }
    assert runtime(wf)["metadata"]["name"] == "my-run-runtime"
    train_job = wf["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]
    assert train_job["runtimeRef"] == {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": "my-run-runtime"}
    assert validate(wf) == [], "the rendered Workflow must pass the Workflow API checks"


def test_long_names_are_truncated_the_way_certification_workflows_are():
    name = "a-very-long-workloadrun-name-that-keeps-going"
    wf = workflow_of(run_doc(name=name))
    assert wf["metadata"]["name"] == truncate_name(name)
    assert len(wf["metadata"]["name"]) == 31 and wf["metadata"]["name"].startswith("a-very-long-workloadrun-")
    assert runtime(wf)["metadata"]["name"] == wf["metadata"]["name"] + "-runtime"
    assert wf["metadata"]["labels"]["nvcre.nvidia.com/workloadrun"] == name


def test_trainer_image_sizes_and_gpus():
    wf = workflow_of(run_doc("torch", numNodes=3))
    spec = trainer(wf)
    assert spec["image"] == "nvcr.io/nvidia/pytorch:26.01-py3"
    assert spec["numNodes"] == 3 and spec["numProcPerNode"] == 8
    assert container(wf)["resources"] == {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}}


# -- frameworks ---------------------------------------------------------------------------------


def test_mpi_workers_run_sshd_and_the_launcher_runs_mpirun():
    doc = run_doc(framework="mpi")
    doc["spec"]["framework"]["mpi"] = {**MPI, "mpiArgs": ["--bind-to", "none"], "args": ["-b", "8", "-e", "1G"]}
    wf = workflow_of(doc)
    rt = runtime(wf)
    assert rt["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "mpi"
    assert rt["spec"]["mlPolicy"]["mpi"] == {"mpiImplementation": "OpenMPI", "numProcPerNode": 8, "sshAuthMountPath": "/tmp/mpi-ssh-raw"}
    worker = container(wf, "node")
    assert worker["command"] == ["sh", "-c"] and "exec /usr/sbin/sshd -De" in worker["args"][0]
    assert "127.0.0.1 true" in worker["readinessProbe"]["exec"]["command"][2]
    assert worker["securityContext"]["capabilities"]["add"] == ["IPC_LOCK", "SYS_CHROOT"]
    launcher = job(wf, "launcher")
    assert launcher["dependsOn"] == [{"name": "node", "status": "Ready"}]
    assert launcher["template"]["metadata"]["labels"] == {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    assert [i["name"] for i in pod(wf, "launcher")["initContainers"]] == ["fix-ssh-permissions"]
    spec = trainer(wf)
    assert spec["command"] == ["/usr/local/mpi/bin/mpirun"]
    assert spec["args"] == [
        "-N",
        "8",
        "--allow-run-as-root",
        "--mca",
        "plm_rsh_args",
        "-o StrictHostKeyChecking=no",
        "-x",
        "NCCL_DEBUG=INFO",
        "-x",
        "NCCL_MNNVL_ENABLE=0",
        "--bind-to",
        "none",
        "/usr/local/bin/all_reduce_perf_mpi",
        "-b",
        "8",
        "-e",
        "1G",
    ]


def test_mpi_rank_count_follows_gpus_per_node_and_mnnvl_follows_the_architecture():
    spec = trainer(workflow_of(run_doc(), gpu_arch="gb200"))
    assert spec["args"][:2] == ["-N", "4"] and spec["numProcPerNode"] == 4
    assert "NCCL_MNNVL_ENABLE=1" in forwarded(spec["args"])
    spec = trainer(workflow_of(run_doc(gpusPerNode=2, enableMNNVL=False), gpu_arch="gb200"))
    assert spec["args"][:2] == ["-N", "2"] and "NCCL_MNNVL_ENABLE=0" in forwarded(spec["args"])


@pytest.mark.parametrize(
    "torch, args",
    [
        ({"script": "/config/train.py", "args": ["--lr", "0.1"]}, ["/config/train.py", "--lr", "0.1"]),
        ({"module": "pkg.train"}, ["-m", "pkg.train"]),
    ],
)
def test_torch_runs_torchrun_under_the_torch_policy(torch, args):
    doc = run_doc("torch")
    doc["spec"]["framework"]["torch"] = torch
    wf = workflow_of(doc)
    assert runtime(wf)["spec"]["mlPolicy"] == {"numNodes": 2, "torch": {}}  # ranks per node: trainer.numProcPerNode
    assert runtime(wf)["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "torch"
    assert trainer(wf)["command"] == ["torchrun"] and trainer(wf)["args"] == args
    assert [j["name"] for j in runtime(wf)["spec"]["template"]["spec"]["replicatedJobs"]] == ["node"]


def test_exec_runs_the_command_as_given():
    doc = run_doc("exec")
    doc["spec"]["framework"]["exec"] = {"command": ["python3", "-c"], "args": ["print('hi')"]}
    wf = workflow_of(doc)
    assert trainer(wf)["command"] == ["python3", "-c"] and trainer(wf)["args"] == ["print('hi')"]
    assert runtime(wf)["spec"]["mlPolicy"] == {"numNodes": 2}
    doc["spec"]["framework"]["exec"] = {"command": ["/bin/true"]}
    assert "args" not in trainer(workflow_of(doc))


def test_mpi_other_implementations_are_refused():
    doc = run_doc()
    doc["spec"]["framework"]["mpi"] = {**MPI, "mpiImplementation": "MPICH"}
    (problem,) = errors_of(doc)
    assert problem.code == "MPIImplementationUnsupported" and problem.path == "spec.framework.mpi.mpiImplementation"


# -- env ----------------------------------------------------------------------------------------


def test_env_reaches_mpi_ranks_with_x_after_the_anchor_and_before_mpi_args():
    doc = run_doc(env=[{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "FOO", "value": "a b=c"}])
    doc["spec"]["framework"]["mpi"] = {**MPI, "mpiArgs": ["--bind-to", "none"]}
    args = trainer(workflow_of(doc))["args"]
    assert forwarded(args) == ["NCCL_DEBUG=WARN", "NCCL_MNNVL_ENABLE=0", "FOO=a b=c"]
    assert args.index("FOO=a b=c") < args.index("--bind-to") < args.index(MPI["binary"])
    assert "env" not in trainer(workflow_of(doc))


def test_env_beats_an_overlay_of_the_same_name_on_mpi():
    overlays = load_overlays(str(OVERLAYS))
    plain = workflow_of(run_doc(), overlays=overlays)
    assert "NCCL_IB_HCA=mlx5_0" in forwarded(trainer(plain)["args"])
    annotations = plain["metadata"]["annotations"]
    assert json.loads(annotations["nvcre.nvidia.com/applied-overlays"]) == ["lab-mpi-env"]

    wf = workflow_of(run_doc(env=[{"name": "NCCL_IB_HCA", "value": "mlx5_4"}]), overlays=overlays)
    names = forwarded(trainer(wf)["args"])
    assert [n for n in names if n.startswith("NCCL_IB_HCA=")] == ["NCCL_IB_HCA=mlx5_4"]
    assert "NCCL_SOCKET_IFNAME=eth0" in names


@pytest.mark.parametrize("framework", ["torch", "exec"])
def test_env_beats_an_overlay_of_the_same_name_in_trainer_env(framework):
    overlays = load_overlays(str(OVERLAYS))
    doc = run_doc(framework, env=[{"name": "NCCL_IB_HCA", "value": "mlx5_4"}, {"name": "NCCL_MNNVL_ENABLE", "value": "1"}])
    wf = workflow_of(doc, overlays=overlays)
    env = {e["name"]: e["value"] for e in trainer(wf)["env"]}
    assert env == {"NCCL_MNNVL_ENABLE": "1", "NCCL_IB_HCA": "mlx5_4", "NCCL_SOCKET_IFNAME": "eth0"}
    assert len(trainer(wf)["env"]) == 3


def test_overlays_see_the_framework_as_a_workloadrun_entry():
    rendered = render(run_doc("torch"), overlays=load_overlays(str(OVERLAYS)))
    (records,) = rendered.provenance
    assert {"decision": "framework", "value": "workloadrun/torch"} in records
    assert [r["value"] for r in records if r["decision"] == "overlay"] == ["lab-trainer-env"]


@pytest.mark.parametrize("env", [[{"name": "A", "value": "1"}], None])
def test_binary_args_holding_x_are_refused_with_or_without_env(env):
    # Platform overlays forward variables too, so the ambiguity exists even without spec.env.
    doc = run_doc(**({"env": env} if env else {}))
    doc["spec"]["framework"]["mpi"] = {**MPI, "args": ["-x", "3"]}
    (problem,) = errors_of(doc)
    assert problem.code == "MPIEnvAmbiguous" and problem.path == "spec.framework.mpi.args[0]"
    doc["spec"]["framework"]["mpi"] = {**MPI, "args": ["-x3"]}
    assert trainer(workflow_of(doc))["args"][-1] == "-x3"


def test_env_value_from_is_refused_with_its_path():
    problems = errors_of(run_doc(env=[{"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]))
    assert [p.path for p in problems] == ["spec.env[0].valueFrom"]


# -- volumes, config, init containers, resources --------------------------------------------------


def test_dev_shm_is_always_mounted_on_the_workers():
    for framework in FRAMEWORKS:
        wf = workflow_of(run_doc(framework))
        assert mounts(container(wf))["dshm"]["mountPath"] == "/dev/shm"
        assert volumes(pod(wf))["dshm"] == {"name": "dshm", "emptyDir": {"medium": "Memory"}}


USER_PARTS = {
    "volumes": [{"name": "scratch", "emptyDir": {}}],
    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
    "initContainers": [
        {"name": "prep", "image": "busybox", "command": ["true"], "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}
    ],
}


@pytest.mark.parametrize("framework", ["mpi", "torch", "exec"])
def test_inline_config_volumes_and_init_containers_land_on_the_workers(framework):
    doc = run_doc(framework, config={"inline": {"a.txt": "hello", "n": "3", "m": '{"a":[true],"b":1}'}}, **copy.deepcopy(USER_PARTS))
    wf = workflow_of(doc)
    config_map = next(d for d in wf["spec"]["dependencies"] if d["kind"] == "ConfigMap")
    assert config_map["metadata"]["name"] == "demo-config"
    assert config_map["data"] == {"a.txt": "hello", "n": "3", "m": '{"a":[true],"b":1}'}
    worker = container(wf)
    assert mounts(worker)["config-volume"] == {"name": "config-volume", "mountPath": "/config", "readOnly": True}
    assert mounts(worker)["scratch"]["mountPath"] == "/scratch"
    assert volumes(pod(wf))["config-volume"]["configMap"] == {"name": "demo-config"}
    assert volumes(pod(wf))["scratch"] == {"name": "scratch", "emptyDir": {}}
    assert [i["name"] for i in pod(wf)["initContainers"]] == ["prep"]
    if framework == "mpi":
        launcher = container(wf, "launcher")
        assert mounts(launcher)["config-volume"] == {"name": "config-volume", "mountPath": "/config", "readOnly": True}
        assert "scratch" not in mounts(launcher) and "scratch" not in volumes(pod(wf, "launcher"))
        assert volumes(pod(wf, "launcher"))["config-volume"]["configMap"] == {"name": "demo-config"}
        assert [i["name"] for i in pod(wf, "launcher")["initContainers"]] == ["fix-ssh-permissions"]


def test_config_map_ref_is_mounted_and_not_shipped():
    wf = workflow_of(run_doc(config={"configMapRef": {"name": "team-scripts"}}))
    assert [d["kind"] for d in wf["spec"]["dependencies"]] == ["TrainingRuntime"]
    assert volumes(pod(wf))["config-volume"]["configMap"] == {"name": "team-scripts"}
    assert mounts(container(wf, "launcher"))["config-volume"]["readOnly"] is True


def test_no_config_means_no_config_volume():
    wf = workflow_of(run_doc())
    assert "config-volume" not in volumes(pod(wf)) and "config-volume" not in mounts(container(wf, "launcher"))


BUILTINS = [
    ("volumes", "name", "dshm"),
    ("volumes", "name", "config-volume"),
    ("volumeMounts", "mountPath", "/dev/shm"),
    ("volumeMounts", "mountPath", "/config"),
    ("volumeMounts", "mountPath", "/config/"),
]


@pytest.mark.parametrize("framework", ["mpi", "torch", "exec"])
@pytest.mark.parametrize("field, key, value", BUILTINS)
def test_reusing_a_builtin_name_or_path_fails_naming_entry_and_path(framework, field, key, value):
    doc = run_doc(
        framework,
        volumes=[{"name": "ok", "emptyDir": {}}, {"name": "other", "emptyDir": {}}],
        volumeMounts=[{"name": "ok", "mountPath": "/ok"}, {"name": "other", "mountPath": "/other"}],
    )
    doc["spec"][field][1][key] = value
    if field == "volumes":
        doc["spec"]["volumeMounts"] = doc["spec"]["volumeMounts"][:1]
    problems = errors_of(doc)
    path = f"spec.{field}[1].{key}"
    (problem,) = [p for p in problems if p.path == path]
    assert problem.code == "BuildFailed"
    assert f"workloadrun/{framework}" in problem.message and path in problem.message


def test_mpi_ssh_auth_is_reserved_on_mpi_only():
    parts = {"volumes": [{"name": "mpi-ssh-auth", "emptyDir": {}}], "volumeMounts": [{"name": "mpi-ssh-auth", "mountPath": "/keys"}]}
    problems = errors_of(run_doc("mpi", **parts))
    assert {(p.code, p.path) for p in problems} == {("BuildFailed", "spec.volumes[0].name"), ("BuildFailed", "spec.volumeMounts[0].name")}
    assert "workloadrun/mpi" in problems[0].message
    mount_path = errors_of(
        run_doc("mpi", volumes=[{"name": "k", "emptyDir": {}}], volumeMounts=[{"name": "k", "mountPath": "/tmp/mpi-ssh-raw"}])
    )
    assert [(p.code, p.path) for p in mount_path] == [("BuildFailed", "spec.volumeMounts[0].mountPath")]
    wf = workflow_of(run_doc("torch", **parts))
    assert "mpi-ssh-auth" in volumes(pod(wf))


def test_checkpoint_reserves_its_volume_only_when_set():
    parts = {"volumes": [{"name": "checkpoint", "emptyDir": {}}], "volumeMounts": [{"name": "checkpoint", "mountPath": "/ckpt"}]}
    assert workflow_of(run_doc("torch", **parts))
    problems = errors_of(run_doc("torch", checkpoint={"storageSize": "1Ti"}, **parts))
    assert {p.path for p in problems} == {"spec.volumes[0].name", "spec.volumeMounts[0].name"}


def test_an_init_container_cannot_take_the_worker_container_name():
    doc = run_doc("exec", initContainers=[{"name": "node", "image": "busybox"}])
    (problem,) = errors_of(doc)
    assert (problem.code, problem.path) == ("BuildFailed", "spec.initContainers[0].name")
    assert "workloadrun/exec" in problem.message


def test_user_pod_parts_must_be_consistent():
    doc = run_doc(
        "torch",
        volumes=[{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}}],
        volumeMounts=[{"name": "a", "mountPath": "/a"}, {"name": "b", "mountPath": "/a/"}],
        initContainers=[
            {"name": "i", "image": "x", "volumeMounts": [{"name": "dshm", "mountPath": "/d"}, {"name": "z", "mountPath": "/z"}]}
        ],
    )
    problems = {(p.code, p.path) for p in errors_of(doc)}
    assert problems == {
        ("DuplicateName", "spec.volumes[1].name"),
        ("DuplicateMountPath", "spec.volumeMounts[1].mountPath"),
        ("UndefinedVolumeMount", "spec.volumeMounts[1].name"),
        ("UndefinedVolumeMount", "spec.initContainers[0].volumeMounts[1].name"),
    }


def test_config_keys_must_be_file_names():
    (problem,) = errors_of(run_doc(config={"inline": {"ok.txt": "x", "../evil": "y"}}))
    assert (problem.code, problem.path) == ("ConfigKeyInvalid", 'spec.config.inline["../evil"]')


def test_resources_go_on_the_worker_container_with_the_gpu_added():
    wf = workflow_of(run_doc("mpi", resources={"limits": {"memory": "64Gi", "cpu": 32}, "requests": {"cpu": "16"}}))
    assert container(wf)["resources"] == {
        "limits": {"memory": "64Gi", "cpu": "32", "nvidia.com/gpu": "8"},
        "requests": {"cpu": "16", "nvidia.com/gpu": "8"},
    }
    assert container(wf, "launcher")["resources"] == {"limits": {"cpu": "2", "memory": "1Gi"}}


def test_resources_that_set_the_gpu_keep_it_and_a_mismatch_warns():
    rendered = render(run_doc("torch", resources={"limits": {"nvidia.com/gpu": 4}}))
    assert container(rendered.workflows[0])["resources"] == {"limits": {"nvidia.com/gpu": "4"}}
    (warning,) = [d for d in rendered.diagnostics if d.code == "GPUCountMismatch"]
    assert warning.path == 'spec.resources.limits["nvidia.com/gpu"]'
    rendered = render(run_doc("torch", gpusPerNode=4, resources={"limits": {"nvidia.com/gpu": "4"}}))
    assert not [d for d in rendered.diagnostics if d.code == "GPUCountMismatch"]


# -- sizing and GPU defaults ----------------------------------------------------------------------


def test_gpu_defaults_come_from_the_architecture_and_explicit_fields_win():
    rendered = render(run_doc("exec"), gpu_arch="gb300")
    wf = rendered.workflows[0]
    assert trainer(wf)["numProcPerNode"] == 4 and {"name": "NCCL_MNNVL_ENABLE", "value": "1"} in trainer(wf)["env"]
    records = {r["decision"]: r for r in rendered.provenance[0]}
    assert records["gpusPerNode"]["source"] == "gpu-defaults:table"
    rendered = render(run_doc("exec", gpusPerNode=2, mlnxPerNode=0, enableMNNVL=False), gpu_arch="gb300")
    records = {r["decision"]: r for r in rendered.provenance[0]}
    assert records["gpusPerNode"] == {"decision": "gpusPerNode", "value": 2, "source": "option"}
    assert {"name": "NCCL_MNNVL_ENABLE", "value": "0"} in trainer(rendered.workflows[0])["env"]


def test_unknown_architecture_warns_with_the_workloadrun_fields():
    facts = load_facts(FIXTURES / "facts" / "unknown-gpu.yaml")
    rendered = render_workloadrun(run_doc("exec", numNodes=1), facts=facts, check_purity=True)
    (warning,) = [d for d in rendered.diagnostics if d.code == "GPUArchitectureDefaults"]
    assert warning.path == "spec"
    assert "set spec.gpusPerNode and spec.mlnxPerNode, and report" in warning.message
    assert "categories" not in warning.message


def test_num_nodes_is_the_job_size_and_intra_node_runs_one_node():
    assert trainer(workflow_of(run_doc(numNodes=5)))["numNodes"] == 5
    rendered = render(run_doc(numNodes=5, orchestration={"testScale": "intra-node"}))
    assert trainer(rendered.workflows[0])["numNodes"] == 1
    assert [(d.code, d.path) for d in rendered.diagnostics if d.code == "IntraNodeSize"] == [("IntraNodeSize", "spec.numNodes")]


def test_facts_drop_nodes_short_of_gpus_and_unpinned_never_shrinks():
    facts = load_facts(FIXTURES / "facts" / "under-capacity.yaml")
    unpinned = {"placement": "Unpinned"}
    rendered = render_workloadrun(run_doc(numNodes=3, orchestration=unpinned), facts=facts, check_purity=True)
    records = {r["decision"]: r["value"] for r in rendered.provenance[0]}
    assert records["excludedNodes"] == ["h100-03"]
    assert trainer(rendered.workflows[0])["numNodes"] == 3
    with pytest.raises(CompileError) as caught:
        render_workloadrun(run_doc(numNodes=4, orchestration=unpinned), facts=facts)
    (problem,) = [d for d in caught.value.diagnostics if d.is_error]
    assert (problem.code, problem.path) == ("PartitionError", "spec.numNodes")
    pinned = render_workloadrun(run_doc(numNodes=4), facts=facts)
    assert trainer(pinned.workflows[0])["numNodes"] == 4


# -- orchestration --------------------------------------------------------------------------------


def test_orchestration_defaults():
    orchestration = workflow_of(run_doc())["spec"]["orchestration"]
    assert orchestration == {
        "target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
        "execution": {"timeoutPerJob": "24h0m0s"},
        "iterations": 1,
    }


@pytest.mark.parametrize("placement", ["Pinned", "Unpinned"])
def test_placement_is_rendered_as_given(placement):
    wf = workflow_of(run_doc(orchestration={"placement": placement, "testScale": "full-scale"}))
    assert wf["spec"]["orchestration"]["placement"] == placement
    assert "topology" not in wf["spec"]["orchestration"]


@pytest.mark.parametrize("scale", ["intra-node", "intra-rack"])
def test_unpinned_with_a_local_scale_is_refused_with_its_path(scale):
    (problem,) = errors_of(run_doc(orchestration={"placement": "Unpinned", "testScale": scale}))
    assert problem.path == "spec.orchestration.placement"
    assert "Unpinned" in problem.message


def test_orchestration_fields_map_onto_the_workflow():
    target = {"nodeSelector": {"pool": "a"}, "taintSelectors": [{"key": "gpu-test", "value": "yes", "effect": "NoSchedule"}]}
    doc = run_doc(target=target, orchestration={"testScale": "intra-rack", "repeatCount": 3, "maxConcurrent": 2, "timeoutPerJob": "90m"})
    wf = workflow_of(doc, gpu_arch="gb200", platform="aws")  # a platform that adds no tolerations of its own
    assert wf["spec"]["orchestration"] == {
        "target": target,
        "topology": {"topologyKey": "nvidia.com/gpu.clique", "strictDomain": True},
        "execution": {"maxConcurrent": 2, "timeoutPerJob": "1h30m0s"},
        "iterations": 3,
    }
    toleration = [{"key": "gpu-test", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}]
    assert pod(wf)["tolerations"] == toleration and pod(wf, "launcher")["tolerations"] == toleration


def test_thresholds_become_validation_with_the_measurement_plugin():
    bandwidth = {"logProfileRef": "nccl-bandwidth", "testType": "all_reduce"}
    wf = workflow_of(run_doc(thresholds={"busBandwidthGBps": "value >= 300"}, bandwidthMeasurement=bandwidth))
    assert wf["spec"]["validation"] == {
        "performance": {
            "enabled": True,
            "plugin": "nccl-tests",
            "measurementTimeout": "5m0s",
            "thresholds": {"thresholds": {"busBandwidthGBps": "value >= 300"}},
        }
    }
    assert wf["spec"]["jobTemplate"]["spec"]["bandwidthMeasurement"] == bandwidth
    goodput = {"logProfileRef": "megatron-training"}
    wf = workflow_of(run_doc("torch", thresholds={"goodputRatio": "value > 0.8"}, goodputMeasurement=goodput))
    assert wf["spec"]["validation"]["performance"]["plugin"] == "nemo-training"
    assert wf["spec"]["jobTemplate"]["spec"]["goodputMeasurement"] == goodput
    assert "validation" not in workflow_of(run_doc())["spec"]


def test_thresholds_need_their_measurement_and_one_plugin():
    (problem,) = errors_of(run_doc(thresholds={"busBandwidthGBps": "value >= 1"}))
    assert (problem.code, problem.path) == ("ThresholdWithoutMeasurement", 'spec.thresholds["busBandwidthGBps"]')
    both = run_doc(
        thresholds={"busBandwidthGBps": "value >= 1", "goodputRatio": "value >= 0.5"},
        bandwidthMeasurement={"logProfileRef": "b"},
        goodputMeasurement={"logProfileRef": "g"},
    )
    (problem,) = errors_of(both)
    assert (problem.code, problem.path) == ("ThresholdsMixed", "spec.thresholds")


def test_checkpoint_ships_a_claim_mounts_it_and_sets_restarts():
    wf = workflow_of(run_doc("torch", checkpoint={"storageSize": "5Ti", "storageClassName": "fast", "maxRestarts": 1}))
    pvc = next(d for d in wf["spec"]["dependencies"] if d["kind"] == "PersistentVolumeClaim")
    assert pvc["metadata"]["name"] == "demo-pvc"
    assert pvc["spec"] == {"accessModes": ["ReadWriteMany"], "storageClassName": "fast", "resources": {"requests": {"storage": "5Ti"}}}
    assert wf["spec"]["jobTemplate"]["spec"]["checkpoint"] == {"pvcName": "demo-pvc", "maxRestarts": 1}
    assert mounts(container(wf))["checkpoint"]["mountPath"] == "/checkpoint"
    assert volumes(pod(wf))["checkpoint"]["persistentVolumeClaim"] == {"claimName": "demo-pvc"}


def test_user_overrides_are_appended_to_the_workflow():
    overrides = [{"when": {"platform": {"equals": "aws"}}, "jobTemplate": {"spec": {"schedulingStallGraceSeconds": 60}}}]
    assert workflow_of(run_doc(overrides=overrides))["spec"]["overrides"] == overrides


# -- pull secrets, labels, gang scheduling --------------------------------------------------------


def test_pull_secrets_reach_the_workers_and_the_launcher():
    wf = workflow_of(run_doc(imagePullSecrets=[{"name": "ngc"}, {"name": "private"}]))
    for name in ("node", "launcher"):
        assert pod(wf, name)["imagePullSecrets"] == [{"name": "ngc"}, {"name": "private"}]
    wf = workflow_of(run_doc("torch", imagePullSecrets=[{"name": "ngc"}]))
    assert pod(wf)["imagePullSecrets"] == [{"name": "ngc"}]


def test_workload_metadata_labels_go_on_the_train_job():
    wf = workflow_of(run_doc(workloadMetadata={"labels": {"team": "a", "cost-center": "42"}}))
    assert wf["spec"]["jobTemplate"]["spec"]["workloadMetadata"] == {"labels": {"cost-center": "42", "team": "a"}}


def test_kai_gang_moves_the_barrier_into_the_launcher():
    wf = workflow_of(run_doc(numNodes=3, gangScheduler={"schedulerName": "kai-scheduler", "queue": "q1"}))
    assert wf["spec"]["gangScheduler"] == {"schedulerName": "kai-scheduler", "queue": "q1", "queueLabelKey": "kai.scheduler/queue"}
    assert "dependsOn" not in job(wf, "launcher")
    inits = pod(wf, "launcher")["initContainers"]
    assert [i["name"] for i in inits] == ["fix-ssh-permissions", "wait-for-workers"]
    assert {"name": "WORKER_COUNT", "value": "3"} in inits[1]["env"]
    for name in ("node", "launcher"):
        assert pod(wf, name)["schedulerName"] == "kai-scheduler"
    assert wf["spec"]["jobTemplate"]["spec"]["workloadMetadata"]["labels"] == {"kai.scheduler/queue": "q1"}


# -- purity, determinism and the CLI -------------------------------------------------------------


def test_the_pass_list_reuses_the_shared_later_passes():
    names = [step.name for step in WORKLOADRUN_PASSES]
    assert names[-8:] == [
        "apply_overlays",
        "merge_env",
        "rewrite_gang",
        "override_image",
        "inject_pull_secrets",
        "merge_workload_labels",
        "stamp_provenance",
        "validate_workflow",
    ]


def test_the_input_document_is_not_changed():
    doc = run_doc(env=[{"name": "A", "value": "1"}], config={"inline": {"a": "b"}}, **copy.deepcopy(USER_PARTS))
    before = copy.deepcopy(doc)
    render(doc)
    assert doc == before


def test_a_certification_cannot_name_a_workloadrun_framework():
    from nvcre.compiler.render import render_certification

    cert = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "c"},
        "spec": {"target": {}, "categories": [{"domain": "workloadrun", "variant": "mpi"}]},
    }
    with pytest.raises(CompileError) as caught:
        render_certification(cert, gpu_arch="h100")
    assert [d.code for d in caught.value.diagnostics if d.is_error] == ["CategoryNotFound"]


def test_wrong_kind_is_refused():
    cert = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "c"},
        "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]},
    }
    (problem,) = errors_of(cert)
    assert (problem.code, problem.path) == ("WrongKind", "kind")


def test_two_renders_are_byte_identical():
    doc = load_file(REPO / "examples" / "workloadrun-nccl-all-reduce.yaml")[0]
    first = dump_yaml_stream(render(doc).workflows)
    second = dump_yaml_stream(render(copy.deepcopy(doc)).workflows)
    assert first == second


def cli(*args: str, seed: str = "0") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.run([*NVCRECTL, "workloadrun", *args], cwd=REPO, capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("example", ["workloadrun-nccl-all-reduce.yaml", "workloadrun-torch.yaml"])
def test_cli_renders_the_examples_identically_across_hash_seeds(example):
    results = [cli("render", f"examples/{example}", "--gpu-arch", "h100", "--platform", "onprem", seed=seed) for seed in ("0", "1", "4242")]
    assert all(r.returncode == 0 for r in results), results[0].stderr
    assert len({r.stdout for r in results}) == 1
    (wf,) = load_documents(results[0].stdout)
    assert wf["kind"] == "Workflow" and not results[0].stdout.startswith("---")


def test_cli_example_is_the_unpinned_all_reduce_with_a_bandwidth_measurement():
    result = cli("render", "examples/workloadrun-nccl-all-reduce.yaml", "--gpu-arch", "h100", "-o", "json")
    assert result.returncode == 0, result.stderr
    wf = json.loads(result.stdout)  # one object, as NVCRE prints a WorkloadRun's Workflow
    assert wf["spec"]["orchestration"]["placement"] == "Unpinned"
    assert wf["spec"]["jobTemplate"]["spec"]["bandwidthMeasurement"]["logProfileRef"] == "nccl-bandwidth"
    assert trainer(wf)["numNodes"] == 4


def test_cli_invalid_input_exits_2_with_the_path_and_nothing_on_stdout(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(dump_yaml_stream([run_doc(orchestration={"placement": "Unpinned", "testScale": "intra-node"})]))
    result = cli("render", str(bad), "--gpu-arch", "h100")
    assert result.returncode == 2 and result.stdout == ""
    assert "spec.orchestration.placement" in result.stderr and "Traceback" not in result.stderr

    clash = tmp_path / "clash.yaml"
    clash.write_text(dump_yaml_stream([run_doc(volumes=[{"name": "a", "emptyDir": {}}, {"name": "dshm", "emptyDir": {}}])]))
    result = cli("render", str(clash), "--gpu-arch", "h100")
    assert result.returncode == 2 and result.stdout == ""
    assert "spec.volumes[1].name" in result.stderr and "workloadrun/mpi" in result.stderr and "[BuildFailed]" in result.stderr


def test_cli_without_an_architecture_or_file_exits_2():
    result = cli("render", "examples/workloadrun-torch.yaml")
    assert result.returncode == 2 and result.stdout == "" and "GPUArchitectureUnknown" in result.stderr
    result = cli("render", "examples/does-not-exist.yaml", "--gpu-arch", "h100")
    assert result.returncode == 2 and result.stdout == ""
