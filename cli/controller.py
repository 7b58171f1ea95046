"""``nvcrectl controller``: run the nvcre controller against the current cluster."""

from __future__ import annotations

import typer

app = typer.Typer(help="Run the controller: apply what was compiled and observe it.", invoke_without_command=True)


# Long: a command's flags are its parameters (the controller's whole flag set); the body only hands them on.
@app.callback(invoke_without_command=True)
def controller(
    kubeconfig: str | None = typer.Option(None, "--kubeconfig", help="kubeconfig file; in-cluster config when unset."),
    namespace: str | None = typer.Option(None, "--namespace", help="Watch one namespace (default: all)."),
    metrics_bind_address: str = typer.Option("127.0.0.1:8080", "--metrics-bind-address", help="host:port for /metrics; 0 disables."),
    metrics_secure: bool = typer.Option(
        True,
        "--metrics-secure/--no-metrics-secure",
        help="Serve /metrics over HTTPS, each request's bearer token reviewed by the API server (TokenReview, "
        "SubjectAccessReview for get /metrics).",
    ),
    metrics_cert_path: str = typer.Option(
        "", "--metrics-cert-path", help="Directory holding the metrics serving certificate and key (default: one made at start)."
    ),
    metrics_cert_name: str = typer.Option("tls.crt", "--metrics-cert-name", help="Certificate file name inside --metrics-cert-path."),
    metrics_cert_key: str = typer.Option("tls.key", "--metrics-cert-key", help="Key file name inside --metrics-cert-path."),
    health_probe_bind_address: str = typer.Option(
        "127.0.0.1:8081", "--health-probe-bind-address", help="host:port for /healthz and /readyz; 0 disables."
    ),
    leader_elect: bool = typer.Option(True, "--leader-elect/--no-leader-elect", help="Hold a Lease so one replica reconciles."),
    lease_namespace: str = typer.Option("default", "--lease-namespace", help="Namespace of the leader-election Lease."),
    workers: int = typer.Option(2, "--workers", help="Concurrent reconciles per tier."),
    log_level: str = typer.Option("info", "--log-level", help="debug, info, warning or error."),
    namespace_access_timeout: str = typer.Option(
        "10m", "--namespace-access-timeout", help="How long a Workflow waits for write access in its namespace."
    ),
    never_schedulable_timeout: str = typer.Option(
        "30m",
        "--never-schedulable-timeout",
        help="How long a Job's pods may wait on nodes where no eviction makes room (taint, selector, cordon) before it fails.",
    ),
    compute_domain_timeout: str = typer.Option(
        "10m",
        "--compute-domain-timeout",
        help="How long a Job's ComputeDomain (GB200/GB300 multi-node NVLink) may stay not Ready before the Job fails.",
    ),
    reconcile_budget: str = typer.Option(
        "1m",
        "--reconcile-budget",
        help="How long one reconcile may hold its worker before another worker takes over its tier's queue.",
    ),
    stuck_worker_timeout: str = typer.Option(
        "5m", "--stuck-worker-timeout", help="How long a worker may stay on one object before /healthz reports unhealthy."
    ),
) -> None:
    """Run until SIGTERM or Ctrl-C."""
    from nvcre.runtime.main import OptionError, Options, serve

    options = Options(
        kubeconfig=kubeconfig,
        namespace=namespace,
        metrics_bind_address=metrics_bind_address,
        metrics_secure=metrics_secure,
        metrics_cert_path=metrics_cert_path,
        metrics_cert_name=metrics_cert_name,
        metrics_cert_key=metrics_cert_key,
        health_probe_bind_address=health_probe_bind_address,
        leader_elect=leader_elect,
        lease_namespace=lease_namespace,
        workers=workers,
        log_level=log_level,
        namespace_access_timeout=namespace_access_timeout,
        never_schedulable_timeout=never_schedulable_timeout,
        compute_domain_timeout=compute_domain_timeout,
        reconcile_budget=reconcile_budget,
        stuck_worker_timeout=stuck_worker_timeout,
    )
    try:
        code = serve(options)
    except OptionError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(code)


def run() -> None:
    """Console entry for this command alone."""
    app()
