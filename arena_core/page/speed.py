"""Measured real-time factors of the local speech engines, as ``bench/rtf.py --write`` saved them.

The figures are measured on one machine and committed with the machine's
description; the About tab shows them next to each model. Nothing is
estimated here: a model with no measurement gets no figure, and a missing or
unreadable file gives an empty mapping (the page then shows no figures).
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

logger = logging.getLogger(__name__)

#: Where ``bench/rtf.py --write`` puts its results by default (committed with the code).
RTF_FILE = Path(__file__).resolve().parents[2] / "docs" / "rtf.json"


def load_rtf(path: Path = RTF_FILE) -> dict[str, float]:
    """``model id -> median real-time factor`` (wall seconds per second of audio) from ``path``."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        rows = doc["rows"]
    except (OSError, ValueError, KeyError, TypeError):
        logger.info("no real-time factors at %s", path)
        return {}
    out = {}
    for row in rows if isinstance(rows, list) else []:
        rtf = row.get("rtf") if isinstance(row, dict) else None
        if isinstance(row, dict) and isinstance(row.get("model"), str) and _finite(rtf):
            out[row["model"]] = float(rtf)
    return out


def machine_note(path: Path = RTF_FILE) -> str:
    """One line saying where and how the figures were measured, or "" without a file."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        return str(doc["machine"]["summary"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _finite(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
