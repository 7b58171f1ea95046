"""Plain documents built straight from the YAML composer's nodes: the common case of a load, sooner.

``yamlio`` reads YAML with ruamel's safe loader: libyaml composes the node tree, then ruamel's
constructor, in Python, turns each node into a value through generic machinery (a constructor
lookup per node, generators for collections, a resolver that works out the YAML version again for
every scalar). A render parses every template it renders that way, and most of that time is the
machinery, not the text.

:func:`plain_documents` builds the same values from the same composed nodes with a direct walk,
for the documents almost every file and template is: mappings whose keys are plain or quoted
strings, each once; lists; scalars. Every scalar that is not a plain string (integers, booleans,
null, floats, and any explicitly tagged scalar) is still built by the loader's own constructor,
so numbers read exactly as before. The loader's resolver remembers the tag of each short scalar
text it has resolved (the tag depends only on the text, its quoting and the YAML version).

Anything else (a syntax error, an anchor or alias, a merge key ``<<``, a key that is not a
string, a duplicate key, a tagged collection, nesting too deep to walk) returns None, and the
caller loads the text the usual way, which gives the value or the error it always gave. A test
holds this module to ruamel's result on every file and rendered template of the package and on
generated documents.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode
from ruamel.yaml.resolver import VersionedResolver

__all__ = ["MemoResolver", "plain_documents"]

#: (YAML version, scalar text, implicit flags) -> the tag the resolver gave; starts over when full
_TAGS: dict[tuple[Any, str, Any], Any] = {}
_TAGS_LIMIT = 16384
#: longer scalars (scripts, certificates) are resolved every time and not kept
_TAG_TEXT_LIMIT = 256


class MemoResolver(VersionedResolver):
    """The versioned resolver, remembering the tag of every short scalar it resolves.

    Only used by the C composer, whose loader has no scanner of its own: the YAML version is then
    always the loader's, and there are no path resolvers, so a scalar's tag depends only on its
    text and implicit flags.
    """

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is not ScalarNode or len(value) > _TAG_TEXT_LIMIT or self.yaml_path_resolvers:
            return super().resolve(kind, value, implicit)
        key = (self._loader_version, value, implicit)
        tag = _TAGS.get(key)
        if tag is None:
            if len(_TAGS) >= _TAGS_LIMIT:
                _TAGS.clear()
            tag = _TAGS[key] = super().resolve(kind, value, implicit)
        return tag


class _Unusual(Exception):
    """The document holds something the direct walk leaves to ruamel's constructor."""


class _Builder:
    """One walk over a composed document; the loader is ruamel's (it builds non-string scalars)."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.text_tag = loader.DEFAULT_SCALAR_TAG
        self.map_tag = loader.DEFAULT_MAPPING_TAG
        self.seq_tag = loader.DEFAULT_SEQUENCE_TAG
        #: ids of the collection nodes of the current document already built: a node met twice
        #: is an alias
        self.seen: set[int] = set()

    def build(self, node: Any) -> Any:
        kind = type(node)
        if kind is ScalarNode:
            if node.ctag is self.text_tag:
                return node.value
            return self.loader.construct_non_recursive_object(node)
        if id(node) in self.seen:
            raise _Unusual
        self.seen.add(id(node))
        if kind is MappingNode and node.ctag is self.map_tag:
            mapping: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if type(key_node) is not ScalarNode or key_node.ctag is not self.text_tag or key_node.value in mapping:
                    raise _Unusual
                mapping[key_node.value] = self.build(value_node)
            return mapping
        if kind is SequenceNode and node.ctag is self.seq_tag:
            return [self.build(child) for child in node.value]
        raise _Unusual


def plain_documents(yaml: Any, text: str) -> list[Any] | None:
    """The non-empty documents of ``text`` as ``yaml.load_all`` gives them, or None when the
    text is not plain enough to build directly (the caller then loads it with ``yaml``).

    ``yaml`` is a safe ``ruamel.yaml.YAML`` loader backed by libyaml; its resolver is replaced by
    :class:`MemoResolver` for this load.
    """
    yaml.Resolver = MemoResolver
    try:
        _, composed = yaml.get_constructor_parser(text)
    except Exception:  # noqa: BLE001 - no libyaml, or a loader set up otherwise: the usual load decides
        return None
    if not isinstance(composed, MemoResolver):
        return None
    loader: Any = composed  # libyaml's composer, ruamel's constructor and this resolver in one object
    builder = _Builder(loader)
    documents: list[Any] = []
    try:
        while loader.check_node():
            root = loader.get_node()
            builder.seen.clear()  # node ids are unique within one live tree, not across documents
            document = builder.build(root)
            if loader.state_generators:  # a tagged scalar built in steps: the usual load finishes it
                return None
            if document is not None:
                documents.append(document)
    except Exception:  # noqa: BLE001 - anything unusual or wrong is the usual load's to build or report
        return None
    finally:
        loader.dispose()
    return documents
