"""Which stated licences let the board claim a model's weights are open.

A model's ``license`` is free text, shown as stated. The board's "Open" filter makes a
claim from it, and the project publishes no invented data: weights count as open only when
the text *starts with* a licence recognised here, by identifier (SPDX, or the Hub's licence
tag where SPDX has none: ``llama3.1``, ``openrail++``), by one of the few names the
registry writes out, or by one of the few licences without an identifier whose full text
the project has read (:data:`READ_LICENCES`: Flite's and Festival's). Anything else
(``unknown``, ``No licence stated``, ``MIT-like``, ``BSD-style``) claims nothing: the model
is not counted open, and the page says "other licence", never "closed", for it.

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

#: Licences with no SPDX identifier or Hub tag whose full text the project read, each with
#: where: every one grants, without fee, the rights to use, copy, modify and distribute,
#: asking only that notices be kept, changes marked and authors' names not deleted (and,
#: for Flite's and the kal voice's, not used to endorse). docs/voices.md names the models.
READ_LICENCES = {
    # /usr/share/doc/flite/copyright (Debian flite 2.2), "All other files are under following
    # license": "Permission is hereby granted, free of charge, to use and distribute ...
    # including without limitation the rights to use, copy, modify, merge, publish,
    # distribute, sublicense, and/or sell copies".
    "cmu flite licence": "/usr/share/doc/flite/copyright",
    # /usr/share/doc/festvox-us-slt-hts/copyright, "License: EST-2003": "Permission to use,
    # copy, modify, and licence this software and its documentation for any purpose, is
    # hereby granted without fee".
    "est-2003": "/usr/share/doc/festvox-us-slt-hts/copyright",
    # /usr/share/doc/festvox-kallpc16k/copyright: the same grant as Flite's (Alan W Black
    # and Kevin Lenzo, 1998), "a file Copyright CSTR ... under the same licences".
    "festival/cstr licence": "/usr/share/doc/festvox-kallpc16k/copyright",
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
    if all(part in OPEN_LICENCES or part in READ_LICENCES for part in parts):
        return lead
    return None
