"""Reading registry fields: strict types, and errors that say where the problem is.

Shared by the registry's parts (arenas and models in :mod:`arena_core.registry`,
judges in :mod:`arena_core.judges.spec`) so that every entry is checked the same way.
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

#: Ids of arenas, models and prompts: stable, URL- and file-name-friendly.
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+/:@-]{0,127}")
#: Path segments (between ``/``) an id may not have: ids name folders and files (a daily
#: snapshot is ``leaderboards/<arena>/<date>.json``, locally and in the dataset repo), where
#: ``..`` climbs out of the folder and an empty or ``.`` segment names another id's place.
BAD_SEGMENTS = frozenset({"", ".", ".."})


def http_url(value: str) -> bool:
    """Whether ``value`` is an http(s) URL with a host and no space or control character:
    a link a reader can open, and nothing a page would run (``javascript:``, ``data:``)."""
    if not value.isprintable() or any(c.isspace() for c in value):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def valid_id(value: str) -> bool:
    """Whether ``value`` matches :data:`ID_PATTERN` and has none of :data:`BAD_SEGMENTS`."""
    return bool(ID_PATTERN.fullmatch(value)) and not BAD_SEGMENTS & set(value.split("/"))


class RegistryError(ValueError):
    """A registry file that cannot be loaded, located as precisely as possible."""

    def __init__(self, message: str, *, file=None, arena=None, model=None, field=None):
        self.file, self.arena, self.model, self.field = file, arena, model, field
        #: The message without the location, for callers that collect problems.
        self.message = message
        where = [str(file) if file else "registry"]
        if arena is not None:
            where.append(f"arena {arena!r}")
        if model is not None:
            where.append(f"model {model!r}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}")


@dataclass(frozen=True)
class Ctx:
    """Where we are in the file, so every error can say so."""

    file: Path | None
    base_dir: Path
    arena: str | None = None
    model: str | None = None

    def at(self, **where) -> Ctx:
        return Ctx(**{**self.__dict__, **where})

    def error(self, message: str, field: str | None = None) -> RegistryError:
        return RegistryError(
            message, file=self.file, arena=self.arena, model=self.model, field=field
        )


#: Most values (scalars, lists and mappings, keys included) free-form options may expand
#: to. A YAML alias repeats what it names, so nine lines of nested aliases (856 bytes)
#: expand to 9**9 strings: gigabytes of keyword arguments when a hosted model is called.
#: The largest shipped options hold a few dozen values.
MAX_FREE_FORM_VALUES = 10_000
#: Most characters of text in them, after the same expansion.
MAX_FREE_FORM_CHARS = 1_000_000
#: Deepest nesting in them (each alias counts at its depth where it is used).
MAX_FREE_FORM_DEPTH = 32


def check_free_form(ctx: Ctx, value: object, field: str) -> None:
    """Refuse free-form options (a backend's or a judge's settings, passed on as they are)
    that expand beyond :data:`MAX_FREE_FORM_VALUES`, :data:`MAX_FREE_FORM_CHARS` or
    :data:`MAX_FREE_FORM_DEPTH`. The walk has its own stack, not recursion, and stops at
    the first bound passed, so an alias bomb (or a list that contains itself) costs at
    most that many steps."""
    stack, values, chars = [(value, 1)], 0, 0
    while stack:
        item, depth = stack.pop()
        values += 1
        if isinstance(item, str | bytes):
            chars += len(item)
        elif isinstance(item, Mapping):
            stack.extend((part, depth + 1) for pair in item.items() for part in pair)
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend((part, depth + 1) for part in item)
        if values > MAX_FREE_FORM_VALUES or chars > MAX_FREE_FORM_CHARS:
            raise ctx.error(f"expands to more than {MAX_FREE_FORM_VALUES:,} values or "
                            f"{MAX_FREE_FORM_CHARS:,} characters (YAML aliases repeat what "
                            "they name)", field)  # fmt: skip
        if depth > MAX_FREE_FORM_DEPTH:
            raise ctx.error(f"is nested deeper than {MAX_FREE_FORM_DEPTH} levels", field)


def shown(value: object) -> str:
    """``repr`` cut short (``reprlib``): a value an error quotes may be an alias bomb
    (``title: *bomb``), whose full ``repr`` would take gigabytes."""
    return _SHORT.repr(value)


#: ``repr`` of at most two levels, four items each, 80 characters of a string.
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxstring = 2, 4, 4, 80


def check_keys(ctx: Ctx, raw: Mapping, allowed: set[str], prefix: str = "") -> None:
    for key in raw:
        if key not in allowed:
            raise ctx.error(f"unknown key; allowed: {', '.join(sorted(allowed))}", f"{prefix}{key}")


def check_unique(ctx: Ctx, ids: list[str], what: str) -> None:
    seen = set()
    for i in ids:
        if i in seen:
            raise ctx.error(f"duplicate {what} {i!r}")
        seen.add(i)


def text(
    ctx: Ctx, raw: Mapping, key: str, *, required: bool = True, prefix: str = ""
) -> str | None:
    value = raw.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        got = "nothing" if value is None else shown(value)
        raise ctx.error(f"must be a non-empty string, got {got}", prefix + key)
    return value.strip()


def ident(ctx: Ctx, raw: Mapping, key: str, prefix: str = "") -> str:
    value = text(ctx, raw, key, prefix=prefix)
    if not valid_id(value):
        raise ctx.error(
            f"{value!r} is not a valid id (letters, digits and . _ + / : @ -, up to 128; "
            "no empty, '.' or '..' part between slashes)",
            prefix + key,
        )
    return value


def number(
    ctx: Ctx, raw: Mapping, key: str, *, required: bool = True, prefix: str = ""
) -> float | None:
    value = raw.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        got = "nothing" if value is None else shown(value)
        raise ctx.error(f"must be a number, got {got}{_text_hint(value)}", prefix + key)
    try:
        return float(value)
    except OverflowError:  # YAML reads integers of any size: past a float's range, as .inf is
        return math.inf if value > 0 else -math.inf


#: A number with an exponent, as YAML 1.2 and Python write it.
_EXPONENT = re.compile(r"([-+]?\d+)(?:\.(\d*))?[eE]([-+]?)(\d+)")
_DECIMAL = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)")


def _text_hint(value: object) -> str:
    """Why YAML read a number as text, when it did: ``weight: 5e-1`` was refused with
    "must be a number, got '5e-1'", a number the operator was told is not one (PyYAML,
    YAML 1.1, takes an exponent only with a dot and a signed exponent)."""
    if not isinstance(value, str):
        return ""
    if found := _EXPONENT.fullmatch(value.strip()):
        whole, fraction, sign, exponent = found.groups()
        return (f" (YAML reads an exponent as a number only with a dot and a sign: write "
                f"{whole}.{fraction or 0}e{sign or '+'}{exponent})")  # fmt: skip
    if _DECIMAL.fullmatch(value.strip()):  # unquoted, YAML would have read a number
        return " (quoted, so YAML reads it as text: write it without quotes)"
    return ""
