"""Arrow's compute kernels without importing ``pyarrow.compute`` until a path needs it.

Importing ``pyarrow.compute`` wraps each of its 286 functions in a Python function with a
generated docstring (``pyarrow.vendored.docscrape``, which imports ``pydoc``, ``urllib``
and more): 0.025-0.03 s of CPU in a fresh process on the 2-core bench machine (7 runs,
``pyarrow._compute`` already imported; ``-X importtime``'s wall clock said 0.08-0.12 s
at load 5 to 12), for kernels that live in ``pyarrow._compute``.
Array methods such as ``cast``, ``unique`` and ``drop_null`` import it too (pyarrow's
``_pc()``). So the modules of the replay take ``pc`` from here, a stand-in that imports
``pyarrow.compute`` on first use, and the replay's own path (one Parquet file, the
default board) calls the kernels it needs through ``call_function``, as the wrappers
do, or answers from the arrays' buffers (:mod:`~arena_core.votes.arrow`). Results are
the wrappers' own (tests compare); pyarrow is pinned (requirements.txt).
"""

from __future__ import annotations

import importlib

import pyarrow as pa
from pyarrow._compute import CastOptions, DictionaryEncodeOptions, TakeOptions, call_function


class _Lazy:
    """``pyarrow.compute``, imported at the first attribute asked of it."""

    def __getattr__(self, name: str):
        module = importlib.import_module("pyarrow.compute")
        return getattr(module, name)


#: Stand-in for ``import pyarrow.compute as pc`` (a function's attribute, looked up when
#: called, so nothing is imported while a module merely holds it).
pc = _Lazy()


def cast(values, kind: pa.DataType):
    """``pc.cast(values, kind)``: the safe cast (an Array or a ChunkedArray, as given)."""
    return call_function("cast", [values], CastOptions.safe(kind))


def dictionary_encode(values):
    """``pc.dictionary_encode(values)``: nulls stay nulls (``null_encoding="mask"``)."""
    return call_function("dictionary_encode", [values], DictionaryEncodeOptions("mask"))


def take(values, positions: pa.Array):
    """``values.take(positions)`` (an Array, ChunkedArray or Table; positions checked)."""
    return call_function("take", [values, positions], TakeOptions(boundscheck=True))


def unique(values):
    """``pc.unique(values)``: distinct values, nulls included, in order of first appearance."""
    return call_function("unique", [values])
