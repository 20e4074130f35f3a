"""YAML reading that refuses duplicate keys, and turns every bad file into a YAML error.

PyYAML keeps the last of two equal keys without a word; in a registry that
hand-edits a model twice that silently drops a field, so we refuse instead.
PyYAML also lets some bad files escape as other exceptions (a non-UTF-8 byte read
as text, ``? [1] : 2``'s unhashable key, ``!!int abc``, a bracket 5,000 deep):
each is raised here as :class:`yaml.YAMLError`, so a caller names the file once.
"""

from pathlib import Path
from typing import Any

import yaml

#: Deepest nesting of lists and mappings a file may have. Composing recurses once per
#: level, so thousands of ``[`` would end in RecursionError; no registry needs more than
#: a dozen levels (a hosted model's arguments are the deepest).
MAX_DEPTH = 100


class _StrictLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses duplicate keys instead of keeping the last,
    unhashable keys, and nesting deeper than :data:`MAX_DEPTH`."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        if self._depth >= MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen = set()
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:  # ``<<: *shared``: construct_mapping merges it (the
            continue  # mapping's own keys win); building ``<<`` as a key failed the file
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:  # a complex key (``? [1] : 2``): PyYAML's own check comes too late
            raise yaml.constructor.ConstructorError(
                None, None, "a list or mapping cannot be a key", key_node.start_mark
            ) from None
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


def _construct_timestamp(loader: _StrictLoader, node: yaml.ScalarNode) -> Any:
    """A date or time as PyYAML reads it, or the text when it names no real day
    (``2026-02-30``), so the field's reader can say which field is wrong instead of
    PyYAML's bare ValueError escaping the loader. An explicit ``!!timestamp`` on text
    that is no date at all is the text too (PyYAML would raise AttributeError)."""
    if not isinstance(node.value, str) or not loader.timestamp_regexp.match(node.value):
        return loader.construct_scalar(node)
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except ValueError:
        return loader.construct_scalar(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)


def load_strict_yaml(path: Path) -> Any:
    """Parse a YAML file (safe loader, duplicate keys refused); raises OSError or yaml.YAMLError.

    The bytes go to PyYAML, not text we decode first: it reads UTF-8 (or UTF-16 with a byte-order
    mark) and reports a byte it cannot decode as a ``ReaderError`` with its position.
    """
    with Path(path).open("rb") as stream:
        try:
            return yaml.load(stream, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, LookupError, ArithmeticError, RecursionError) as exc:
            # A value its explicit tag cannot take (``!!int abc``, ``!!bool maybe``): PyYAML's
            # constructors raise the conversion's own error, without a mark.
            raise yaml.YAMLError(f"a value YAML cannot read: {type(exc).__name__}: {exc}") from None
