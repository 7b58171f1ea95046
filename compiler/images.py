"""Mirror manifest: every container image and source repository a render will pull, per category.

Pure: rendered objects in, a manifest out. Every ``image`` on a container-like mapping counts,
wherever it sits (pod templates inside dependencies, runtime patches, the trainer), with its
role: ``container``, ``init``, ``sidecar`` (an init container with ``restartPolicy: Always``),
``ephemeral`` or ``trainer``. Source repositories are the Git URLs workloads clone at start
(for example Megatron-LM for the training entries), found in the environment variables the
catalog uses for them. Registry, repository, tag and digest are split out so a mirror job can
rewrite references without parsing them again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from .diff import category_of, format_path
from .redact import redact_text

__all__ = [
    "SOURCE_REPOSITORY_ENV",
    "CategoryImages",
    "ImageReference",
    "ImageUse",
    "SourceRepository",
    "mirror_manifest",
    "parse_reference",
    "unique_images",
    "unique_sources",
]

#: Environment variables through which catalog workloads receive a Git repository to clone.
SOURCE_REPOSITORY_ENV = {"MEGATRON_REPO": "Megatron-LM"}

_ROLE_BY_LIST = {"containers": "container", "initContainers": "init", "ephemeralContainers": "ephemeral"}


@dataclass(frozen=True)
class ImageUse:
    role: str
    container: str
    job: str | None
    path: str

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "container": self.container, "path": self.path}
        if self.job is not None:
            data["replicatedJob"] = self.job
        return data


@dataclass(frozen=True)
class ImageReference:
    image: str
    registry: str
    repository: str
    tag: str | None
    digest: str | None
    uses: tuple[ImageUse, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "image": self.image,
            "registry": self.registry,
            "repository": self.repository,
            "tag": self.tag,
            "digest": self.digest,
            "uses": [u.as_dict() for u in self.uses],
        }


@dataclass(frozen=True)
class SourceRepository:
    url: str
    project: str
    env: str
    container: str
    path: str

    def as_dict(self) -> dict[str, Any]:
        return {"url": self.url, "project": self.project, "env": self.env, "container": self.container, "path": self.path}


@dataclass(frozen=True)
class CategoryImages:
    category: str
    kind: str
    name: str
    images: tuple[ImageReference, ...]
    sources: tuple[SourceRepository, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "kind": self.kind,
            "name": self.name,
            "images": [i.as_dict() for i in self.images],
            "sourceRepositories": [s.as_dict() for s in self.sources],
        }


def parse_reference(image: str) -> tuple[str, str, str | None, str | None]:
    """``(registry, repository, tag, digest)`` with Docker's defaults (``docker.io``, ``library/``)."""
    rest, _, digest = image.partition("@")
    first, slash, remainder = rest.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, remainder
    else:
        registry, path = "docker.io", rest
        if "/" not in path:
            path = f"library/{path}"
    last = path.rsplit("/", 1)[-1]
    tag = None
    if ":" in last:
        path, tag = path.rsplit(":", 1)
    return registry, path, tag, digest or None


def _name_key(items: Sequence[Any]) -> list[Any] | None:
    if items and all(isinstance(i, Mapping) and isinstance(i.get("name"), str) for i in items):
        names = [("name", i["name"]) for i in items]
        return names if len(set(names)) == len(names) else None
    return None


def _containers(tree: Any, parts: list[Any]) -> Iterator[tuple[list[Any], Mapping[str, Any]]]:
    """Every mapping that carries an ``image`` string, with its path (named list items by name)."""
    if isinstance(tree, Mapping):
        if isinstance(tree.get("image"), str):
            yield parts, tree
        for key in sorted(tree):
            yield from _containers(tree[key], [*parts, key])
    elif isinstance(tree, list):
        keys = _name_key(tree) or list(range(len(tree)))
        for key, item in zip(keys, tree):
            yield from _containers(item, [*parts, key])


def _role(parts: Sequence[Any], container: Mapping[str, Any]) -> str:
    parent = parts[-2] if len(parts) >= 2 else None
    if parent in _ROLE_BY_LIST:
        role = _ROLE_BY_LIST[str(parent)]
        return "sidecar" if role == "init" and container.get("restartPolicy") == "Always" else role
    if parts and parts[-1] == "trainer":
        return "trainer"
    return "other"


def _job(parts: Sequence[Any]) -> str | None:
    for before, part in pairwise(parts):
        if before == "replicatedJobs" and isinstance(part, tuple):
            return str(part[1])
    return None


def _sources(parts: list[Any], container: Mapping[str, Any]) -> Iterator[SourceRepository]:
    for item in container.get("env") or []:
        if isinstance(item, Mapping) and item.get("name") in SOURCE_REPOSITORY_ENV and isinstance(item.get("value"), str):
            yield SourceRepository(
                url=redact_text(item["value"]),
                project=SOURCE_REPOSITORY_ENV[item["name"]],
                env=item["name"],
                container=str(container.get("name") or ""),
                path=format_path([*parts, "env", ("name", item["name"])]),
            )


def _category_images(document: Mapping[str, Any]) -> CategoryImages:
    uses: dict[str, list[ImageUse]] = {}
    sources: list[SourceRepository] = []
    for parts, container in _containers(document, []):
        use = ImageUse(_role(parts, container), str(container.get("name") or parts[-1]), _job(parts), format_path(parts))
        uses.setdefault(container["image"], []).append(use)
        sources.extend(_sources(parts, container))
    images = tuple(ImageReference(image, *parse_reference(image), tuple(found)) for image, found in sorted(uses.items()))
    unique = {(s.url, s.path): s for s in sources}
    meta = document.get("metadata") or {}
    return CategoryImages(
        category_of(document),
        str(document.get("kind") or ""),
        str(meta.get("name") or ""),
        images,
        tuple(unique[k] for k in sorted(unique)),
    )


def mirror_manifest(documents: Sequence[Mapping[str, Any]]) -> list[CategoryImages]:
    """One entry per rendered object, in render order."""
    return [_category_images(document) for document in documents]


def unique_images(manifest: Sequence[CategoryImages]) -> list[str]:
    return sorted({ref.image for entry in manifest for ref in entry.images})


def unique_sources(manifest: Sequence[CategoryImages]) -> list[str]:
    return sorted({source.url for entry in manifest for source in entry.sources})
