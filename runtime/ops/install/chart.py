"""Where ``setup init``'s own objects come from (``--chart-ref``), the controller image values (``--image``)
and its pull Secret (``--image-pull-secret``).

By default the objects are the ones :func:`nvcre.compiler.install.render_install` gives, which
equal ``helm template`` of the chart ``setup chart`` writes. With ``--chart-ref`` they are that
chart rendered by helm with the same values (at ``--version`` when helm pulls it), so a mirror
or a newer published chart can be installed; the kept-values ConfigMap is added either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...kube.client import Kube
from ...kube.errors import NotFound
from ...kube.resources import Resource
from .helm import GHCR, helm_template
from .ownership import marked

if TYPE_CHECKING:
    from nvcre.compiler.install import Installed

__all__ = ["PULL_SECRET", "PullSecretTaken", "chart_objects", "controller_values", "ensure_pull_secret", "image_values"]

#: The controller's image pull Secret ``--image-pull-secret`` creates (NVCRE's name).
PULL_SECRET = "nvcrectl-pull-secret"
RELEASE = "nvcre"
_SECRETS = Resource("", "v1", "secrets", "Secret")


class PullSecretTaken(Exception):
    """A Secret of the pull Secret's name exists and nvcrectl did not create it."""


def chart_objects(
    installed: Installed, chart_ref: str | None, *, version: str | None = None, token: str | None = None
) -> list[dict[str, Any]]:
    """The install's objects (from ``chart_ref`` via helm when given) plus the kept-values ConfigMap."""
    from nvcre.compiler.install.keep import kept_values_configmap

    values = installed.values
    namespace = str(values["namespace"]["name"])
    if chart_ref is None:
        objects = [dict(o) for o in installed.objects]
    else:
        objects = helm_template(chart_ref, RELEASE, namespace, version=version, values=values, token=token)
    return [*objects, kept_values_configmap(values, namespace)]


def ensure_pull_secret(kube: Kube, namespace: str, token: str, say: Callable[[str], object] = lambda line: None) -> None:
    """Create or renew the ghcr.io pull Secret (user ``token``) in the controller's namespace.

    One of that name nvcrectl did not create is left alone and reported."""
    from nvcre.compiler.compose import registry_pull_secret

    secret = registry_pull_secret("secret", namespace, GHCR, "token", token)  # named nvcrectl-pull-secret
    try:
        live = kube.get(_SECRETS, PULL_SECRET, namespace)
    except NotFound:
        live = None
    if live is not None and not marked(live):
        raise PullSecretTaken(
            f"Secret {namespace}/{PULL_SECRET} exists and was not created by nvcrectl; it was left untouched. "
            "Delete it or drop --image-pull-secret"
        )
    kube.apply(secret)
    say(f"{'Renewed' if live is not None else 'Created'} image pull Secret {namespace}/{PULL_SECRET} for {GHCR}.")


def image_values(image: str) -> dict[str, Any]:
    """The values layer for a controller image: ``repo``, ``repo:tag`` or ``repo@sha256:...``."""
    if "@" in image:
        repository, digest = image.split("@", 1)
        fields = {"repository": repository, "digest": digest}
    else:
        head, sep, tag = image.rpartition(":")
        fields = {"repository": head, "tag": tag} if sep and "/" not in tag else {"repository": image}
    return {"manager": {"image": fields}}


def controller_values(image: str | None = None, pull_secret: str | None = None) -> list[dict[str, Any]]:
    """Values layers for a run's ``--image`` (see :func:`image_values`) and ``--controller-pull-secret``
    (the name of an image pull Secret in the controller's namespace)."""
    layers: list[dict[str, Any]] = []
    if image:
        layers.append(image_values(image))
    if pull_secret:
        layers.append({"manager": {"imagePullSecrets": [pull_secret]}})
    return layers
