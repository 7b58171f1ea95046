"""One Prometheus server as a child process: scraping targets over HTTPS with a bearer token file,
evaluating rule files, always stopped.

:class:`Prometheus` writes a configuration for its :class:`ScrapeTarget` list (``honor_labels`` on,
as the install's ServiceMonitor has it, because the controller's ``job`` label names the nvcre
Job), starts ``prometheus`` on a free loopback port with its data in a working directory, waits for
``/-/ready``, and reads ``/api/v1/alerts``, ``/api/v1/targets`` and instant queries. Use it as a
context manager: leaving the block stops the server whatever happened inside, a KeyboardInterrupt
included, and the process gets SIGKILL from the kernel if this one dies first (see
:mod:`.processes`). The server's own address is loopback only.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Sequence

from .errors import ControlPlaneError
from .processes import Process, free_port, spawn, wait_ready

__all__ = ["Prometheus", "ScrapeTarget", "prometheus_argv", "prometheus_config"]

#: Bounded answers: a larger API answer is refused rather than read.
MAX_ANSWER_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class ScrapeTarget:
    """``host:port`` of a ``/metrics`` endpoint and how to reach it.

    ``token_file`` holds the bearer token sent with each scrape; ``ca_file`` verifies the server's
    certificate, or, without one, the certificate is not verified (a self-signed serving
    certificate made at start, as the install's ServiceMonitor does).
    """

    address: str
    job: str = "nvcre-metrics-service"
    scheme: str = "https"
    token_file: Path | None = None
    ca_file: Path | None = None
    path: str = "/metrics"


def prometheus_config(targets: Sequence[ScrapeTarget], rule_files: Sequence[Path], *, interval: str = "2s") -> dict[str, Any]:
    """The configuration (as data; JSON is valid YAML) for ``targets`` and ``rule_files``."""
    scrapes: list[dict[str, Any]] = []
    for target in targets:
        if target.scheme not in ("http", "https"):
            raise ValueError(f"scheme {target.scheme!r}: expected http or https")
        scrape: dict[str, Any] = {
            "job_name": target.job,
            "scheme": target.scheme,
            "metrics_path": target.path,
            "honor_labels": True,
            "static_configs": [{"targets": [target.address]}],
        }
        if target.token_file is not None:
            scrape["authorization"] = {"type": "Bearer", "credentials_file": str(target.token_file)}
        if target.scheme == "https":
            scrape["tls_config"] = {"ca_file": str(target.ca_file)} if target.ca_file else {"insecure_skip_verify": True}
        scrapes.append(scrape)
    return {
        "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
        "rule_files": [str(Path(p).resolve()) for p in rule_files],
        "scrape_configs": scrapes,
    }


def prometheus_argv(binary: Path, config: Path, data: Path, port: int) -> list[str]:
    """The command line: loopback address, data directory, no remote features."""
    return [
        str(binary),
        f"--config.file={config}",
        f"--storage.tsdb.path={data}",
        "--storage.tsdb.retention.time=1d",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]


def is_ready(url: str) -> bool:
    """Whether the Prometheus at ``url`` answers ``/-/ready`` with 200 (OSError while it starts)."""
    with urllib.request.urlopen(f"{url}/-/ready", timeout=3) as answer:
        return bool(answer.status == 200)


class Prometheus:
    """See the module docstring."""

    def __init__(
        self,
        binary: Path,
        workdir: Path,
        targets: Sequence[ScrapeTarget],
        rule_files: Sequence[Path] = (),
        *,
        interval: str = "2s",
        start_timeout: float = 60.0,
    ) -> None:
        self.binary = Path(binary)
        self.workdir = Path(workdir)
        self.targets = list(targets)
        self.rule_files = [Path(p) for p in rule_files]
        self.interval = interval
        self.start_timeout = start_timeout
        self.port = 0
        self.process: Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Prometheus:
        if not self.binary.is_file():
            raise ControlPlaneError(f"no prometheus binary at {self.binary}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "prometheus.yml"
        config.write_text(json.dumps(prometheus_config(self.targets, self.rule_files, interval=self.interval), indent=2) + "\n")
        self.port = free_port()
        argv = prometheus_argv(self.binary, config, self.workdir / "data", self.port)
        self.process = spawn("prometheus", argv, cwd=self.workdir, log=self.workdir / "prometheus.log")
        try:
            wait_ready(self.process, self._ready, "prometheus /-/ready", self.start_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _ready(self) -> bool:
        return is_ready(self.url)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None

    def __enter__(self) -> Prometheus:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.stop()

    def log_tail(self) -> str:
        return self.process.tail() if self.process is not None else "(not running)"

    def _api(self, path: str, **query: str) -> Any:
        url = f"{self.url}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = answer.read(MAX_ANSWER_BYTES + 1)
        if len(body) > MAX_ANSWER_BYTES:
            raise ControlPlaneError(f"{path}: answer larger than {MAX_ANSWER_BYTES} bytes")
        document = json.loads(body)
        if document.get("status") != "success":
            raise ControlPlaneError(f"{path}: {document.get('error') or document}")
        return document["data"]

    def alerts(self) -> list[dict[str, Any]]:
        """Every alert Prometheus holds now (pending and firing), as ``/api/v1/alerts`` lists them."""
        return list(self._api("/api/v1/alerts").get("alerts") or [])

    def firing(self, name: str) -> list[dict[str, Any]]:
        return [a for a in self.alerts() if a.get("state") == "firing" and (a.get("labels") or {}).get("alertname") == name]

    def targets_health(self) -> list[dict[str, Any]]:
        """The active targets with their ``health`` (up/down/unknown) and ``lastError``."""
        return list(self._api("/api/v1/targets").get("activeTargets") or [])

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's vector (``[{metric, value}]``)."""
        data = self._api("/api/v1/query", query=expr)
        return list(data.get("result") or [])

    def series(self, match: str, start: float | None = None) -> list[dict[str, str]]:
        """Every series matching the selector ``match`` that Prometheus stored since ``start`` (a
        Unix time; default: all it holds), as label sets including ``__name__``."""
        query = {"match[]": match}
        if start is not None:
            query["start"] = f"{start:.3f}"
        return [dict(labels) for labels in self._api("/api/v1/series", **query) or []]

    def metric_names(self) -> list[str]:
        """Every metric name Prometheus holds (``/api/v1/label/__name__/values``)."""
        return [str(name) for name in self._api("/api/v1/label/__name__/values") or []]

    def rule_names(self) -> list[str]:
        """The alerting rules loaded, by name."""
        groups = self._api("/api/v1/rules").get("groups") or []
        return [str(rule.get("name")) for group in groups for rule in group.get("rules") or [] if rule.get("type") == "alerting"]
