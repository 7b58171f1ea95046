"""The real-node environment's parts that need no kubelet: the DNS client, the CONNECT parser
and routing, the configuration files, the docker-archive wrapper, the host snapshot diff, the
cgroup-joining launcher and (as root) the namespace plumbing, a forwarder into the environment's
network namespace and the egress proxy out of the API server."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import tarfile
import threading
import time
from pathlib import Path

import pytest
import yaml

from nvcre.testing.processes import spawn
from nvcre.testing.realnodes import cgroups, hostdirs, hoststate, images, namespaces
from nvcre.testing.realnodes.cluster import profile_labels
from nvcre.testing.realnodes.dnsquery import build_query, parse_answer
from nvcre.testing.realnodes.forward import ApiForwarder, ConnectProxy, parse_connect
from nvcre.testing.realnodes.node import NodeLayout, cni_config, containerd_config, kubelet_config
from nvcre.testing.simprofiles import profile


def _answer(query: bytes, addresses: list[str], rcode: int = 0) -> bytes:
    ident = struct.unpack("!H", query[:2])[0]
    header = struct.pack("!HHHHHH", ident, 0x8180 | rcode, 1, len(addresses), 0, 0)
    records = b"".join(struct.pack("!HHHIH", 0xC00C, 1, 1, 5, 4) + socket.inet_aton(a) for a in addresses)
    return header + query[12:] + records


def test_a_dns_answer_gives_its_addresses_and_a_foreign_answer_is_rejected() -> None:
    query = build_query("w-0.svc.ns.svc.cluster.local", 4242)
    assert query[12:].startswith(b"\x03w-0\x03svc\x02ns\x03svc\x07cluster\x05local\x00")
    assert parse_answer(_answer(query, ["10.244.0.7", "10.244.1.3"]), 4242) == (0, ["10.244.0.7", "10.244.1.3"])
    assert parse_answer(_answer(query, [], rcode=3), 4242) == (3, [])
    with pytest.raises(ValueError, match="not the answer"):
        parse_answer(_answer(query, ["10.244.0.7"]), 4243)
    with pytest.raises(ValueError):
        build_query("x" * 64 + ".local", 1)


def test_connect_requests_are_parsed_and_only_environment_or_loopback_targets_are_dialled(tmp_path: Path) -> None:
    assert parse_connect(b"CONNECT 10.250.0.10:10250 HTTP/1.1\r\nHost: x\r\n\r\n") == ("10.250.0.10", 10250)
    for bad in (b"GET / HTTP/1.1\r\n\r\n", b"CONNECT 10.250.0.10 HTTP/1.1\r\n\r\n", b"CONNECT h:99999 HTTP/1.1\r\n\r\n"):
        with pytest.raises(ValueError):
            parse_connect(bad)
    proxy = ConnectProxy.__new__(ConnectProxy)
    proxy.networks = [__import__("ipaddress").ip_network(n) for n in ("10.250.0.0/24", "10.244.0.0/16")]
    assert proxy.route("10.250.0.11") == "netns"
    assert proxy.route("10.244.3.9") == "netns"
    assert proxy.route("127.0.0.1") == "host"
    assert proxy.route("192.0.2.2") == "refuse"
    assert proxy.route("10.1.0.1") == "refuse"
    assert proxy.route("example.com") == "refuse"


def test_node_configuration_keeps_the_node_off_the_host(tmp_path: Path) -> None:
    layout = NodeLayout("h100-onprem-1", 1, tmp_path / "n1", "nvcre-abcd")
    assert (layout.ip, layout.pod_subnet, layout.bridge, layout.pods_cgroup) == ("10.250.0.11", "10.244.1.0/24", "nvbr1", "/nvcre-abcd/n1")
    assert {str(target) for _, target in layout.private_binds()} >= {"/var/lib/kubelet", "/run/containerd", "/var/log/pods"}
    assert all(source.is_relative_to(tmp_path) for source, _ in layout.private_binds())
    kubelet = yaml.safe_load(
        kubelet_config(layout, ca=tmp_path / "ca", serving_cert=tmp_path / "c", serving_key=tmp_path / "k", cgroup_v1=True)
    )
    assert kubelet["failCgroupV1"] is False and kubelet["makeIPTablesUtilChains"] is False
    assert kubelet["resolvConf"] == "" and kubelet["clusterDNS"] == ["10.250.0.2"]
    assert kubelet["address"] == kubelet["healthzBindAddress"] == "10.250.0.11"
    assert kubelet["containerRuntimeEndpoint"] == f"unix://{tmp_path}/n1/containerd.sock"
    conf = json.loads(cni_config(layout))["plugins"][0]
    assert conf["bridge"] == "nvbr1" and conf["ipMasq"] is False and conf["ipam"]["ranges"] == [[{"subnet": "10.244.1.0/24"}]]
    toml = containerd_config(layout, sandbox_image="localhost/nvcre-pause:x", cni_bin_dir=tmp_path / "cni", runc="/usr/sbin/runc")
    assert 'sandbox_image = "localhost/nvcre-pause:x"' in toml and "restrict_oom_score_adj = true" in toml
    assert f'conf_dir = "{tmp_path}/n1/cni/net.d"' in toml


def test_real_nodes_carry_the_profile_labels_without_kwoks_own() -> None:
    labels = profile_labels("gb200-onprem-0", profile("gb200"), "onprem", 0)
    assert labels["nvidia.com/gpu.product"] and labels["nvidia.com/gpu.present"] == "true"
    assert "type" not in labels


def test_a_layer_is_wrapped_as_a_docker_archive_whose_config_names_the_layer(tmp_path: Path) -> None:
    layer = tmp_path / "layer.tar"
    with tarfile.open(layer, "w") as tar:
        data = b"#!/bin/sh\n"
        info = tarfile.TarInfo("bin/x")
        info.size = len(data)
        tar.addfile(info, __import__("io").BytesIO(data))
    image = images.wrap_layer(layer, "localhost/t:1", ["/bin/x"], tmp_path / "out.tar")
    with tarfile.open(image.archive) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
        config = json.load(tar.extractfile(manifest[0]["Config"]))  # type: ignore[arg-type]
        stored = tar.extractfile(manifest[0]["Layers"][0]).read()  # type: ignore[union-attr]
    assert manifest[0]["RepoTags"] == ["localhost/t:1"]
    assert config["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(layer.read_bytes()).hexdigest()}"]
    assert stored == layer.read_bytes() and config["config"]["Cmd"] == ["/bin/x"]


def test_snapshot_differences_name_each_change() -> None:
    before = {"addresses": ["lo inet 127.0.0.1/8"], "sysctls": {"net.ipv4.ip_forward": "0"}, "netns": []}
    after = {"addresses": ["lo inet 127.0.0.1/8", "lo inet 10.250.0.1/32"], "sysctls": {"net.ipv4.ip_forward": "1"}, "netns": []}
    assert hoststate.differences(before, after) == ["addresses: added lo inet 10.250.0.1/32", "sysctls: net.ipv4.ip_forward '0' -> '1'"]
    assert hoststate.differences(after, after) == []


def test_made_mount_points_are_removed_again_and_existing_ones_kept(tmp_path: Path) -> None:
    (tmp_path / "var").mkdir()
    made = hostdirs.make_mount_points([str(tmp_path / "var/lib/kubelet"), str(tmp_path / "var/lib/cni")])
    assert made == sorted(made, key=lambda p: len(Path(p).parts), reverse=True)
    assert set(made) == {str(tmp_path / "var/lib/kubelet"), str(tmp_path / "var/lib/cni"), str(tmp_path / "var/lib")}
    assert hostdirs.remove_made(made) == []
    assert (tmp_path / "var").is_dir() and not (tmp_path / "var/lib").exists()


def test_the_launcher_joins_every_cgroup_before_the_command_runs(tmp_path: Path) -> None:
    procs = [tmp_path / "a.procs", tmp_path / "b.procs"]
    argv = namespaces.in_cgroups(procs, ["/bin/sh", "-c", "echo $$"])
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()
    assert [p.read_text().strip() for p in procs] == [out, out]


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("nsenter") is None or not Path("/sys/fs/cgroup").is_dir(),
    reason="namespaces and cgroups need root, util-linux and a cgroup hierarchy",
)


@needs_root
def test_the_namespace_forwarder_and_egress_proxy_reach_across_without_touching_the_host(tmp_path: Path) -> None:
    before = hoststate.snapshot()
    top = f"nvcre-test{os.getpid()}"
    cgroups.make(f"{top}/env.runtime")
    holder = spawn("netns", namespaces.in_cgroups(cgroups.procs_files(f"{top}/env.runtime"), namespaces.netns_holder_argv()),
                   cwd=tmp_path, log=tmp_path / "netns.log")  # fmt: skip
    try:
        netns = namespaces.ns_path(holder.pid)
        deadline = time.monotonic() + 10
        while os.readlink(netns) == os.readlink("/proc/self/ns/net") and time.monotonic() < deadline:
            time.sleep(0.05)
        namespaces.run_in(netns, ["ip", "link", "set", "lo", "up"])
        namespaces.run_in(netns, ["ip", "addr", "add", "10.250.0.10/32", "dev", "lo"])
        assert cgroups.pids(top) == {holder.pid}

        host = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=lambda: host.accept()[0].sendall(b"from the host"), daemon=True).start()
        forwarder = ApiForwarder(netns, host.getsockname()[1])
        inside = namespaces.socket_in(netns)
        inside.connect(("127.0.0.1", host.getsockname()[1]))
        assert inside.recv(100) == b"from the host"
        inside.close()
        forwarder.close()

        server = namespaces.socket_in(netns)
        server.bind(("10.250.0.10", 10250))
        server.listen(1)
        threading.Thread(target=lambda: server.accept()[0].sendall(b"from the node"), daemon=True).start()
        proxy = ConnectProxy(tmp_path / "egress.sock", netns, ["10.250.0.0/24"])
        client = socket.socket(socket.AF_UNIX)
        client.connect(str(tmp_path / "egress.sock"))
        client.sendall(b"CONNECT 10.250.0.10:10250 HTTP/1.1\r\nHost: n\r\n\r\n")
        received = b""
        while b"from the node" not in received:
            chunk = client.recv(200)
            assert chunk, received
            received += chunk
        assert received.startswith(b"HTTP/1.1 200 ")
        client.close()
        proxy.close()
    finally:
        assert cgroups.remove(top) == []
    assert holder.popen.wait(timeout=5) == -9
    assert hoststate.differences(before, hoststate.snapshot()) == []


def test_the_killed_rank_fault_knows_a_rank_from_its_launchers() -> None:
    from nvcre.testing.realnodes.rankkill import rank_name

    # as the processes show in a worker pod (argv as /proc/PID/cmdline gives it)
    assert rank_name(["python3", "/usr/local/bin/all_reduce_perf", "-b", "1M", "-e", "1M"]) == "all_reduce_perf"
    assert rank_name(["/usr/bin/python3", "-u", "/usr/local/bin/alltoall_perf_mpi", "-g", "2"]) == "alltoall_perf_mpi"
    assert rank_name(["/usr/bin/python3", "/workspace/Megatron-LM/pretrain_gpt.py", "--tensor-model-parallel-size", "2"]) == (
        "pretrain_gpt.py"
    )
    for launcher in (
        ["python3", "/usr/local/bin/torchrun", "--nproc-per-node", "2", "/workspace/Megatron-LM/pretrain_gpt.py"],
        ["mpirun", "--allow-run-as-root", "-np", "4", "all_reduce_perf"],
        ["orted", "-mca", "ess", "env"],
        ["/usr/sbin/sshd", "-D", "-e"],
        ["sh", "-c", "all_reduce_perf -b 1M"],
        ["python3"],
        [],
    ):
        assert rank_name(launcher) is None, launcher


def test_real_fault_specs_are_parsed_with_clear_errors() -> None:
    from nvcre.testing.realnodes.faults import RealFaultError, parse_real_assignment, parse_real_fault

    assert str(parse_real_fault("unhealthy-device")) == "unhealthy-device:1"
    assert str(parse_real_fault("unhealthy-device:3")) == "unhealthy-device:3"
    assert str(parse_real_fault("slow-link:100mbit")) == "slow-link:100mbit"
    assert parse_real_assignment(" h100-onprem-1 = stopped-kubelet ") == ("h100-onprem-1", parse_real_fault("stopped-kubelet"))
    assert str(parse_real_fault("killed-rank")) == "killed-rank"
    assert str(parse_real_fault("oom-kill")) == "oom-kill"
    assert parse_real_fault("dropped-path:h100-onprem-1").peer == "h100-onprem-1"
    assert str(parse_real_fault("dropped-path:h100-onprem-1")) == "dropped-path:h100-onprem-1"
    for spec, message in (
        ("oom-kill:1", "takes no argument"),
        ("dropped-path", "name the other end"),
        ("dropped-path:-x; iptables -F", "name the other end"),
        ("killed-rank:2", "takes no argument"),
        ("xid", "unknown fault 'xid' on real nodes"),
        ("unhealthy-device:x", "whole number"),
        ("unhealthy-device:0", "at least one device"),
        ("slow-link", "give a rate"),
        ("slow-link:fast; reboot", "give a rate"),
        ("none:1", "takes no argument"),
    ):
        with pytest.raises(RealFaultError, match=message):
            parse_real_fault(spec)
    with pytest.raises(RealFaultError, match="NODE=KIND"):
        parse_real_assignment("stopped-kubelet")


def test_a_slow_links_token_bucket_holds_10_ms_of_its_rate_and_at_least_8_kib() -> None:
    # A bucket as large as a small message lets that size through at full speed: behind the
    # former fixed 64 KB bucket a 4mbit pair's best size measured a healthy bandwidth and passed
    # a floor its large sizes missed.
    from nvcre.testing.realnodes.faults import RealFaultError, burst_bytes

    assert burst_bytes("4mbit") == 8 * 1024
    assert burst_bytes("100kbit") == 8 * 1024
    assert burst_bytes("32mbit") == 40_000
    assert burst_bytes("1gbit") == 1_250_000
    with pytest.raises(RealFaultError, match="no rate"):
        burst_bytes("64kb")
