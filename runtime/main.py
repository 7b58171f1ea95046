"""Starting the controller from flags: validation of the options, signals, exit codes.

``serve(options)`` is what both ``python -m nvcre.runtime`` and ``nvcrectl controller`` run.
Bad flags raise :class:`OptionError` (the callers print it and exit 2); SIGTERM and SIGINT stop
the controller cleanly (workers finish their reconcile, the Lease is released).

The metrics endpoint is secure by default (``--metrics-secure``): HTTPS with the certificate in
``--metrics-cert-path`` (``--metrics-cert-name``/``--metrics-cert-key`` inside it), or one made at
start, and every scrape's bearer token reviewed by the API server (TokenReview, then a
SubjectAccessReview for ``get`` on ``/metrics``). ``--metrics-secure=false`` serves plain HTTP
with no checks, for a controller on a developer's machine. The health probes stay plain HTTP
without authentication on their own address, which the kubelet reaches.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .endpoint.serve import Endpoint, parse_address

if TYPE_CHECKING:
    from .controller import ControllerConfig
    from .endpoint.tls import ServingCertificate

__all__ = ["OptionError", "Options", "main", "serve"]

log = logging.getLogger("nvcre.runtime.main")


class OptionError(ValueError):
    """A flag value the controller cannot run with (``--flag: problem``)."""


@dataclass(frozen=True)
class Options:
    kubeconfig: str | None = None
    namespace: str | None = None
    metrics_bind_address: str = "127.0.0.1:8080"
    health_probe_bind_address: str = "127.0.0.1:8081"
    metrics_secure: bool = True
    metrics_cert_path: str = ""
    metrics_cert_name: str = "tls.crt"
    metrics_cert_key: str = "tls.key"
    leader_elect: bool = True
    lease_namespace: str = "default"
    workers: int = 2
    log_level: str = "info"
    namespace_access_timeout: str = "10m"
    never_schedulable_timeout: str = "30m"
    compute_domain_timeout: str = "10m"
    reconcile_budget: str = "1m"
    stuck_worker_timeout: str = "5m"

    def check(self) -> None:
        for flag, value in (
            ("--metrics-bind-address", self.metrics_bind_address),
            ("--health-probe-bind-address", self.health_probe_bind_address),
        ):
            try:
                parse_address(value)
            except ValueError as exc:
                raise OptionError(f"{flag}: {exc}") from None
        if self.workers < 1:
            raise OptionError("--workers: must be at least 1")
        if self.metrics_cert_path and not self.metrics_secure:
            raise OptionError("--metrics-cert-path: only used with --metrics-secure (HTTPS); drop one of them")
        for flag, name in (("--metrics-cert-name", self.metrics_cert_name), ("--metrics-cert-key", self.metrics_cert_key)):
            if not name or "/" in name or name in (".", ".."):
                raise OptionError(f"{flag}: a file name inside --metrics-cert-path, not {name!r}")
        from nvcre.compiler.durations import parse_duration

        for flag, raw in (
            ("--namespace-access-timeout", self.namespace_access_timeout),
            ("--never-schedulable-timeout", self.never_schedulable_timeout),
            ("--compute-domain-timeout", self.compute_domain_timeout),
            ("--reconcile-budget", self.reconcile_budget),
            ("--stuck-worker-timeout", self.stuck_worker_timeout),
        ):
            try:
                if parse_duration(raw) <= 0:
                    raise ValueError("must be positive")
            except ValueError as exc:
                raise OptionError(f"{flag}: {exc}") from None
        if self.log_level.lower() not in ("debug", "info", "warning", "error"):
            raise OptionError("--log-level: one of debug, info, warning, error")


def _certificate(options: Options) -> ServingCertificate:
    """The metrics endpoint's serving certificate: the given files, else a generated one."""
    from .endpoint.tls import CertificateError, ServingCertificate

    try:
        return ServingCertificate(options.metrics_cert_path or None, options.metrics_cert_name, options.metrics_cert_key)
    except CertificateError as exc:
        raise OptionError(f"--metrics-cert-path: {exc}") from None


def _controller_config(options: Options, *, secure_metrics: bool) -> ControllerConfig:
    """The controller's settings from the process flags."""
    from nvcre.compiler.durations import parse_duration

    from .controller import ControllerConfig
    from .reconcile.context import Settings

    return ControllerConfig(
        namespace=options.namespace or None,
        # the secure endpoint is served here, around the controller, rather than by it
        metrics_address="0" if secure_metrics else options.metrics_bind_address,
        health_address=options.health_probe_bind_address,
        leader_elect=options.leader_elect,
        lease_namespace=options.lease_namespace,
        workers=options.workers,
        reconcile_budget=parse_duration(options.reconcile_budget),
        stuck_worker_limit=parse_duration(options.stuck_worker_timeout),
        settings=Settings(
            namespace_access_timeout=parse_duration(options.namespace_access_timeout),
            never_schedulable_timeout=parse_duration(options.never_schedulable_timeout),
            compute_domain_timeout=parse_duration(options.compute_domain_timeout),
        ),
    )


def serve(options: Options, stop: threading.Event | None = None) -> int:
    """Run until SIGTERM/SIGINT (or ``stop``); the process exit code."""
    from .controller import Controller
    from .kube.client import ApiServerClient
    from .logs import configure

    options.check()
    configure(options.log_level)
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
    metrics_at = parse_address(options.metrics_bind_address)
    certificate = _certificate(options) if metrics_at is not None and options.metrics_secure else None
    kube = ApiServerClient.from_kubeconfig(options.kubeconfig)
    config = _controller_config(options, secure_metrics=certificate is not None)
    log.info("controller starting", extra={"namespace": options.namespace or "*", "leader_elect": options.leader_elect})
    secure: Endpoint | None = None
    try:
        controller = Controller(kube, config)
        if certificate is not None and metrics_at is not None:
            from .kube.review import RequestReviewer

            try:
                secure = Endpoint(
                    metrics_at, registry=controller.metrics.registry, tls=certificate.context, authorize=RequestReviewer(kube).review
                )
            except OSError as exc:
                raise OptionError(
                    f"--metrics-bind-address: cannot listen on {options.metrics_bind_address} ({exc.strerror or exc})"
                ) from None
            secure.start()
            log.info(
                "serving metrics over HTTPS with bearer-token authorization",
                extra={"address": f"{metrics_at[0]}:{secure.port}", "certificate": "generated" if certificate.generated else "files"},
            )
        return controller.run(stop)
    finally:
        if secure is not None:
            secure.stop()
        kube.close()
        log.info("controller stopped")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m nvcre.runtime", description="Run the nvcre controller.")
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--namespace", default=None, help="watch one namespace (default: all)")
    parser.add_argument(
        "--metrics-bind-address", default="127.0.0.1:8080", help="host:port for /metrics (conventionally :8443 for HTTPS); 0 disables"
    )
    parser.add_argument(
        "--metrics-secure",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="serve /metrics over HTTPS, each request's bearer token reviewed by the API server "
        "(TokenReview, SubjectAccessReview for get /metrics); --no-metrics-secure or --metrics-secure=false for plain HTTP",
    )
    parser.add_argument(
        "--metrics-cert-path", default="", help="directory holding the metrics serving certificate and key (default: one made at start)"
    )
    parser.add_argument("--metrics-cert-name", default="tls.crt", help="certificate file name inside --metrics-cert-path")
    parser.add_argument("--metrics-cert-key", default="tls.key", help="key file name inside --metrics-cert-path")
    parser.add_argument("--health-probe-bind-address", default="127.0.0.1:8081")
    parser.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--lease-namespace", default="default")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--log-level", default="info")
    parser.add_argument(
        "--namespace-access-timeout", default="10m", help="how long a Workflow waits for write access in its namespace (Go duration)"
    )
    parser.add_argument(
        "--never-schedulable-timeout",
        default="30m",
        help="how long a Job's pods may stay unschedulable on every node for a reason no eviction "
        "clears (taint, selector, cordon, too large a request) before it fails (Go duration)",
    )
    parser.add_argument(
        "--compute-domain-timeout",
        default="10m",
        help="how long a Job's ComputeDomain may stay not Ready after launch before the Job fails (Go duration)",
    )
    parser.add_argument(
        "--reconcile-budget",
        default="1m",
        help="how long one reconcile may hold its worker before another worker takes over its tier's queue and "
        "the object is visited again only after a delay (Go duration)",
    )
    parser.add_argument(
        "--stuck-worker-timeout",
        default="5m",
        help="how long a worker may stay on one object before /healthz reports the process unhealthy (Go duration)",
    )
    return parser


def _boolean_equals(argv: Sequence[str]) -> list[str]:
    """``--metrics-secure=false``/``=true`` as the Go flag package spells them, mapped to the
    ``--[no-]metrics-secure`` switches (argparse's boolean switch takes no value)."""
    out = []
    for arg in argv:
        flag, eq, value = arg.partition("=")
        if eq and flag in ("--metrics-secure", "--leader-elect") and value.lower() in ("true", "false", "1", "0"):
            out.append(flag if value.lower() in ("true", "1") else "--no-" + flag[2:])
        else:
            out.append(arg)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(_boolean_equals(sys.argv[1:] if argv is None else argv))
    options = Options(
        kubeconfig=args.kubeconfig,
        namespace=args.namespace,
        metrics_bind_address=args.metrics_bind_address,
        health_probe_bind_address=args.health_probe_bind_address,
        metrics_secure=args.metrics_secure,
        metrics_cert_path=args.metrics_cert_path,
        metrics_cert_name=args.metrics_cert_name,
        metrics_cert_key=args.metrics_cert_key,
        leader_elect=args.leader_elect,
        lease_namespace=args.lease_namespace,
        workers=args.workers,
        log_level=args.log_level,
        namespace_access_timeout=args.namespace_access_timeout,
        never_schedulable_timeout=args.never_schedulable_timeout,
        compute_domain_timeout=args.compute_domain_timeout,
        reconcile_budget=args.reconcile_budget,
        stuck_worker_timeout=args.stuck_worker_timeout,
    )
    try:
        return serve(options)
    except OptionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
