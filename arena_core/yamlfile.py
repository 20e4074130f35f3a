"""YAML reading that refuses duplicate keys.

PyYAML keeps the last of two equal keys without a word; in a registry that
hand-edits a model twice that silently drops a field, so we refuse instead.
"""

from pathlib import Path
from typing import Any

import yaml


class _StrictLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses duplicate keys instead of keeping the last."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


def _construct_timestamp(loader: _StrictLoader, node: yaml.ScalarNode) -> Any:
    """A date or time as PyYAML reads it, or the text when it names no real day
    (``2026-02-30``), so the field's reader can say which field is wrong instead of
    PyYAML's bare ValueError escaping the loader."""
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except ValueError:
        return loader.construct_scalar(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)


def load_strict_yaml(path: Path) -> Any:
    """Parse a YAML file (safe loader, duplicate keys refused); raises OSError or yaml.YAMLError."""
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
