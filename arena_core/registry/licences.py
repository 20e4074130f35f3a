"""Which stated licences let the board claim a model's weights are open.

A model's ``license`` is free text, shown as stated. The board's "Open" filter makes a
claim from it, and the project publishes no invented data: weights count as open only when
the text *starts with* a licence recognised here, by identifier (SPDX, or the Hub's licence
tag where SPDX has none: ``llama3.1``, ``openrail++``) or by one of the few names the
registry writes out. Anything else (``unknown``, ``No licence stated``, ``CMU Flite licence
(BSD-style)``, ``MIT-like``) claims nothing: the model is not counted open.

The leading part is the text up to the first ``(``, ``;`` or ``,``: the registry states the
weights' licence first and qualifies or adds to it after (``Apache-2.0 (weights and
voices); MIT (ONNX export)``). An SPDX expression of recognised licences joined by ``OR``
or ``AND`` is recognised too.
"""

from __future__ import annotations

import re

#: Licences under which published weights may be downloaded and run, by lower-case
#: identifier: SPDX ids, then the Hub's licence tags for model licences SPDX lacks.
OPEN_LICENCES = frozenset({
    "apache-2.0", "mit", "isc", "bsd-2-clause", "bsd-3-clause", "mpl-2.0", "unlicense",
    "gpl-2.0", "gpl-2.0-only", "gpl-2.0-or-later", "gpl-3.0", "gpl-3.0-only",
    "gpl-3.0-or-later", "lgpl-2.1", "lgpl-2.1-only", "lgpl-2.1-or-later", "lgpl-3.0",
    "lgpl-3.0-only", "lgpl-3.0-or-later", "agpl-3.0", "agpl-3.0-only", "agpl-3.0-or-later",
    "cc0-1.0", "cc-by-3.0", "cc-by-4.0", "cc-by-sa-3.0", "cc-by-sa-4.0", "cc-by-nc-4.0",
    "cc-by-nc-sa-4.0", "openrail", "openrail++", "creativeml-openrail-m", "llama2", "llama3",
    "llama3.1", "llama3.2", "llama3.3", "gemma",
})  # fmt: skip

#: Names the registry writes out in full, with the identifier each stands for.
LICENCE_NAMES = {
    "apache license 2.0": "apache-2.0",
    "modified bsd": "bsd-3-clause",
    "creativeml open rail++-m": "openrail++",
    "llama 3.1 community license": "llama3.1",
    "llama 3.2 community license": "llama3.2",
}

_LEAD_END = re.compile(r"[(;,]")
_EXPRESSION = re.compile(r"\s+(?:or|and)\s+")


def open_licence(text: str | None) -> str | None:
    """The recognised open licence a model's ``license`` text starts with, else None.

    >>> open_licence("Apache-2.0 (weights and voices); MIT (ONNX export)")
    'apache-2.0'
    >>> open_licence("No licence stated") is None
    True
    """
    if not text:
        return None
    lead = _LEAD_END.split(text, maxsplit=1)[0].strip().lower()
    lead = LICENCE_NAMES.get(lead, lead)
    parts = _EXPRESSION.split(lead)
    if all(part in OPEN_LICENCES for part in parts):
        return lead
    return None
