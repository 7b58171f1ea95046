"""The Helm chart under charts/nvcre: `helm lint` is clean and `helm template` gives exactly the objects of `setup render`.

Needs helm v4.3.2 built from its Go module (`python -m nvcre.testing.gobuild.build --helm`, which the
fixture runs itself when Go is there); without helm and Go the tests skip, except under CI=true,
where they fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.emit import dump_yaml
from nvcre.compiler.yamlio import load_documents
from tests.gotools import go_tool, unavailable

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "nvcre"
DIGEST = "sha256:" + "0123456789abcdef" * 4


def _helm(request: pytest.FixtureRequest) -> Path:
    """``$NVCRE_HELM``, else the cached build, built now (like the control plane) when Go is there."""
    explicit = os.environ.get("NVCRE_HELM")
    if explicit:
        if not Path(explicit).is_file():
            unavailable(f"NVCRE_HELM={explicit} is not a file")
        return Path(explicit)
    return go_tool(request, "helm")


@pytest.fixture(scope="module")
def helm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    binary = _helm(request)
    home = tmp_path_factory.mktemp("helm-home")
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(binary), *args], capture_output=True, text=True, env=env, timeout=120, check=False)

    return run


def setup_render(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nvcre.cli.setup", "render", *args], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )


def _key(obj: dict) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def objects(text: str) -> list[dict]:
    return sorted((doc for doc in load_documents(text) if doc is not None), key=_key)


VALUE_SETS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "namespaced-two-run-namespaces": {"rbac": {"scope": "namespaced", "runNamespaces": ["team-a", "team-b"]}},
    "namespaced-no-run-namespaces": {"rbac": {"scope": "namespaced"}},
    "image-digest-and-pull-secrets": {
        "manager": {
            "image": {"repository": "registry.example.com:5000/gpu/nvcre-manager", "tag": "", "digest": DIGEST, "pullPolicy": "Always"},
            "imagePullSecrets": ["regcred", "mirror.creds"],
        }
    },
    "manager-tuning": {
        "manager": {
            "replicas": 3,
            "workers": 16,
            "logLevel": "debug",
            "namespaceAccessTimeout": "1h30m",
            "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}, "limits": {"memory": "2Gi", "nvidia.com/gpu": 0}},
            "nodeSelector": {"node-role.kubernetes.io/control-plane": "", "zone": "yes", "rack": "0755"},
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "nvcre", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 30},
            ],
        }
    },
    "no-leader-election-zero-replicas": {"manager": {"replicas": 0, "leaderElection": False, "image": {"tag": "v1.2.3-rc.1"}}},
    "renamed-existing-namespace": {"namespace": {"name": "gpu-cert", "create": False}, "serviceAccount": {"name": "cert.runner"}},
    "no-prometheus-operator": {"metrics": {"serviceMonitor": {"enabled": False}, "prometheusRule": {"enabled": False}}},
    "rules-without-monitor": {"metrics": {"serviceMonitor": {"enabled": False}}},
    "own-metrics-cert-and-selector-labels": {
        "namespace": {"name": "gpu-cert"},
        "metrics": {
            "certSecret": "nvcre-metrics-cert",
            "serviceMonitor": {"labels": {"release": "kube-prometheus-stack", "app.kubernetes.io/part-of": "not-ours"}},
            "prometheusRule": {"labels": {"release": "kube-prometheus-stack", "example.com/empty": ""}},
        },
    },
    "bare-install": {
        "crds": {"install": False},
        "logProfiles": {"install": False},
        "rbac": {"scope": "namespaced", "runNamespaces": ["only-one"]},
    },
    "hostile-strings": {
        "manager": {
            "nodeSelector": {
                "template": "{{ .Release.Name }}",
                "quote": "a\"b'c",
                "html": "<&>",
                "multi": "line one\nline two: x",
                "null-ish": "null",
                "num": "1e3",
            }
        }
    },
}


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_helm_template_equals_setup_render(helm: Any, tmp_path: Path, name: str) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(dump_yaml(VALUE_SETS[name]))
    rendered = helm("template", "nvcre", str(CHART), "--namespace", "nvcre", "-f", str(values))
    assert rendered.returncode == 0, rendered.stderr
    expected = setup_render("-f", str(values))
    assert expected.returncode == 0, expected.stderr
    got, want = objects(rendered.stdout), objects(expected.stdout)
    assert [_key(o) for o in got] == [_key(o) for o in want]
    for mine, theirs in zip(got, want):
        assert mine == theirs, _key(mine)


def test_set_flags_mean_the_same_in_both(helm: Any) -> None:
    flags = [
        "--set",
        "rbac.scope=namespaced,rbac.runNamespaces={team-a,team-b}",
        "--set",
        "manager.workers=4",
        "--set-json",
        'manager.tolerations=[{"key":"gpu","operator":"Exists"}]',
    ]
    rendered = helm("template", "nvcre", str(CHART), *flags)
    expected = setup_render(*flags)
    assert rendered.returncode == 0 and expected.returncode == 0, rendered.stderr + expected.stderr
    assert objects(rendered.stdout) == objects(expected.stdout)


def test_a_null_inside_a_pass_through_value_removes_the_entry_in_both(helm: Any) -> None:
    flags = ["--set", "manager.resources.limits=null", "--set", "manager.resources.requests.memory=null"]
    rendered = helm("template", "nvcre", str(CHART), *flags)
    expected = setup_render(*flags)
    assert rendered.returncode == 0 and expected.returncode == 0, rendered.stderr + expected.stderr
    assert objects(rendered.stdout) == objects(expected.stdout)
    (deployment,) = [o for o in objects(expected.stdout) if o["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m"}}


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_helm_lint_strict_is_clean(helm: Any, tmp_path: Path, name: str) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(dump_yaml(VALUE_SETS[name]))
    linted = helm("lint", "--strict", str(CHART), "-f", str(values))
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "[WARNING]" not in linted.stdout and "[ERROR]" not in linted.stdout


BAD_VALUES: dict[str, dict[str, Any]] = {
    "unknown-scope": {"rbac": {"scope": "everywhere"}},
    "unknown-key": {"rbac": {"scoop": "cluster"}},
    "short-digest": {"manager": {"image": {"digest": "sha256:abc"}}},
    "bad-tag-without-digest": {"manager": {"image": {"tag": "has space"}}},
    "replicas-without-leader-election": {"manager": {"replicas": 2, "leaderElection": False}},
    "replicas-as-string": {"manager": {"replicas": "2"}},
    "negative-replicas": {"manager": {"replicas": -1}},
    "duplicate-run-namespace": {"rbac": {"scope": "namespaced", "runNamespaces": ["a", "a"]}},
    "namespace-not-a-label": {"namespace": {"name": "Team_A"}},
    "namespace-with-newline": {"namespace": {"name": "team-a\n"}},
    "bad-duration": {"manager": {"namespaceAccessTimeout": "ten minutes"}},
    "bad-log-level": {"manager": {"logLevel": "verbose"}},
    "resources-not-a-map": {"manager": {"resources": ["cpu"]}},
    "service-monitor-flag-as-string": {"metrics": {"serviceMonitor": {"enabled": "yes"}}},
    "unknown-metrics-key": {"metrics": {"secure": False}},
    "cert-secret-not-a-name": {"metrics": {"certSecret": "Not_A_Secret"}},
    "monitor-label-not-a-string": {"metrics": {"serviceMonitor": {"labels": {"release": 1}}}},
    "rule-labels-not-a-map": {"metrics": {"prometheusRule": {"labels": ["release=kps"]}}},
}


@pytest.mark.parametrize("name", sorted(BAD_VALUES))
def test_helm_refuses_what_setup_render_refuses(helm: Any, tmp_path: Path, name: str) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(dump_yaml(BAD_VALUES[name]))
    refused = setup_render("-f", str(values))
    assert refused.returncode == 2 and refused.stdout == "", refused.stderr
    rendered = helm("template", "nvcre", str(CHART), "-f", str(values))
    assert rendered.returncode != 0, f"helm accepted {name}"
    assert "values don't meet the specifications of the schema" in rendered.stderr or "schema" in rendered.stderr.lower()
