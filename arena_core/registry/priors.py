"""Priors from published benchmarks: what a registry entry must carry to start a rating.

A prior is a figure a benchmark published for a model (a mean opinion score, a
quality index, an error rate), put on the rating scale by its arena's
``prior_mapping``: ``rating = ANCHOR + points_per_unit * (value - center)``::

    prior_mapping: {benchmark: TTS quality index, center: 82, points_per_unit: 8,
                    source: "where the centre and slope come from"}
    models:
      - id: my/model
        prior:
          value: 86.5                               # the published figure
          source: https://example.org/paper#table-2  # a URL (http/https) or a citation
          accessed: 2026-03-01                      # the day the figure was read there
          benchmark: TTS quality index              # optional: must be the mapping's
          rating: 1036                              # optional: what the author expects

The rules, each with the kind of problem it raises:

* ``source`` is required (:data:`NO_SOURCE`): a prior nobody can look up is an
  invented number. A source that looks like a URL must be an http(s) URL with a host.
* ``accessed`` is required (:data:`INVALID`), an ISO date ``YYYY-MM-DD``:
  published tables get revised, so the figure is only checkable with its date.
  Registry files written before this field existed fail with a message saying
  what to add; there is no date to assume for them.
* ``benchmark`` names the benchmark the figure is on. The mapping converts one
  benchmark, so a prior naming another one is refused (:data:`BENCHMARK_MISMATCH`):
  a figure on another benchmark needs a published conversion first, not this
  slope. Names compare ignoring case and runs of spaces. Left out, the prior is
  taken to be on the mapping's benchmark, as older registry files meant.
* The mapping must round-trip (:data:`NO_ROUND_TRIP`): ``value -> rating ->
  value`` gives the value back within :data:`ROUND_TRIP_TOLERANCE` (relative) at
  the centre and at every prior's value, and ``rating -> value -> rating`` does
  at both ends of the plausible scale (``ANCHOR -/+`` :data:`MAX_PRIOR_OFFSET`).
  That fails for a zero or non-finite slope or centre, and for a slope so small
  or so large that float arithmetic loses the figure. A prior's mapped rating
  must also lie within :data:`MAX_PRIOR_OFFSET` of the anchor, and a stated
  ``rating`` must equal the mapped one within :data:`STATED_RATING_TOLERANCE`.
  A negative slope is allowed: it is the right one for a benchmark where lower
  is better (an error rate).

The readers return what they could read and every problem found, so the
loader (:mod:`arena_core.registry`) raises the first one and ``registry
--check`` (:mod:`arena_core.registry.check`) lists them all: one set of rules.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from arena_core.ratings.scale import ANCHOR, SCALE
from arena_core.registry.fields import Ctx, RegistryError, http_url, number, shown, text

#: Problem kinds. A prior without a source (or with an unusable one).
NO_SOURCE = "no_source"
#: A mapping (or a prior through it) that does not round-trip, or lands off the scale.
NO_ROUND_TRIP = "no_round_trip"
#: A prior on another benchmark than its arena's mapping converts.
BENCHMARK_MISMATCH = "benchmark_mismatch"
#: Anything else wrong with a prior or a mapping (types, unknown keys, the date).
INVALID = "invalid"

#: Relative error allowed on a round trip. Each float operation costs ~1e-16; a
#: mapping that loses 7 of float64's 16 digits has a slope so small or so large
#: that rounding, not the figure, decides the rating.
ROUND_TRIP_TOLERANCE = 1e-9
#: Farthest a prior may sit from the anchor (points): odds of 10^5 to 1 against
#: a model at the anchor, 2.5 times the largest spread of true ratings the
#: posterior considers (800 points, ``arena_core.ratings.posterior``). Beyond it
#: the centre or the slope is wrong, not the model extraordinary.
MAX_PRIOR_OFFSET = 5 * SCALE
#: A stated rating matches the mapped one within half the board's last digit (points).
STATED_RATING_TOLERANCE = 0.05

_MAPPING_KEYS = {"benchmark", "center", "points_per_unit", "source"}
_PRIOR_KEYS = {"value", "source", "accessed", "benchmark", "rating"}
#: Slack on "not after today": somewhere on Earth it is already tomorrow.
_TIME_ZONES = timedelta(days=1)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class PriorMapping:
    """How an arena turns a published benchmark figure into a starting rating.

    ``rating = ANCHOR + points_per_unit * (value - center)``; for a TTS quality
    index, ``center=82, points_per_unit=8`` gives the rule 1000 + 8 x (index - 82).
    """

    benchmark: str
    center: float
    points_per_unit: float
    source: str | None = None

    def rating(self, value: float) -> float:
        return ANCHOR + self.points_per_unit * (value - self.center)

    def value(self, rating: float) -> float:
        """The inverse: the benchmark figure that maps to ``rating``."""
        return self.center + (rating - ANCHOR) / self.points_per_unit


@dataclass(frozen=True)
class Prior:
    """A published benchmark figure for a model: where, on which benchmark, read when."""

    value: float
    source: str
    #: The figure on the rating scale, through the arena's mapping.
    rating: float
    benchmark: str
    accessed: date

    def to_json(self) -> dict:
        return {"value": self.value, "rating": self.rating, "benchmark": self.benchmark,
                "source": self.source, "accessed": self.accessed.isoformat()}  # fmt: skip


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a prior or a mapping: its kind, field and what to do."""

    kind: str
    field: str
    message: str


def read_mapping(ctx: Ctx, raw: Any) -> tuple[PriorMapping | None, list[Problem]]:
    """An arena's ``prior_mapping`` (None when absent or wrong) and its problems."""
    if raw is None:
        return None, []
    if not isinstance(raw, Mapping):
        return None, [Problem(INVALID, "prior_mapping",
                              "must be a mapping {benchmark, center, points_per_unit, source}")]  # fmt: skip
    p = "prior_mapping."
    problems = _unknown_keys(raw, _MAPPING_KEYS, p)
    benchmark = _read(problems, INVALID, text, ctx, raw, "benchmark", prefix=p)
    source = _read(problems, INVALID, text, ctx, raw, "source", required=False, prefix=p)
    center = _read(problems, INVALID, number, ctx, raw, "center", prefix=p)
    slope = _read(problems, INVALID, number, ctx, raw, "points_per_unit", prefix=p)
    if center is not None and not math.isfinite(center):
        problems.append(Problem(NO_ROUND_TRIP, p + "center", f"must be finite, got {center}"))
    elif slope is not None:
        problems += _slope_problems(center, slope, p + "points_per_unit")
    if problems:
        return None, problems
    return PriorMapping(benchmark, center, slope, source), []


def _slope_problems(center: float | None, slope: float, field: str) -> list[Problem]:
    """A slope must be finite and non-zero, and ratings across the plausible scale must
    come back through the value (a huge slope collapses them onto the centre)."""
    if not math.isfinite(slope) or slope == 0:
        return [Problem(NO_ROUND_TRIP, field, f"must be a finite number other than 0, got "
                        f"{slope}: a rating must change with the benchmark figure")]  # fmt: skip
    if center is None:
        return []
    mapping = PriorMapping("", center, slope)
    for rating in (ANCHOR - MAX_PRIOR_OFFSET, ANCHOR + MAX_PRIOR_OFFSET):
        value = mapping.value(rating)
        back = mapping.rating(value) if math.isfinite(value) else math.nan
        if not _close(back, rating):
            return [Problem(NO_ROUND_TRIP, field, f"does not round-trip: rating {rating:g} -> "
                            f"value {value:g} -> rating {back:g}; the slope {slope:g} is too "
                            "large for float arithmetic")]  # fmt: skip
    return []


def read_prior(ctx: Ctx, raw: Any, mapping: PriorMapping | None, *, mapping_broken: bool = False,
               today: date | None = None) -> tuple[Prior | None, list[Problem]]:  # fmt: skip
    """A model's ``prior`` (None when absent or wrong) and its problems.

    ``mapping_broken``: the arena's mapping has problems of its own (already
    reported), so a missing mapping is not reported again. ``today``: a date
    read more than a day after it is refused (the loader passes none: loading
    needs no clock).
    """
    if raw is None:
        return None, []
    if not isinstance(raw, Mapping):
        return None, [Problem(INVALID, "prior", "must be a mapping {value, source, accessed}")]
    problems = _unknown_keys(raw, _PRIOR_KEYS, "prior.")
    source = _source(raw.get("source"), problems)
    accessed = _accessed(raw.get("accessed"), problems, today)
    value = _read(problems, INVALID, number, ctx, raw, "value", prefix="prior.")
    if value is not None and not math.isfinite(value):
        problems.append(Problem(INVALID, "prior.value", f"must be finite, got {value}"))
        value = None
    stated = _read(problems, INVALID, number, ctx, raw, "rating", required=False, prefix="prior.")
    benchmark = _read(problems, INVALID, text, ctx, raw, "benchmark", required=False,
                      prefix="prior.")  # fmt: skip
    if mapping is None:
        if not mapping_broken:
            problems.append(Problem(INVALID, "prior", "a prior needs the arena's prior_mapping "
                                    "to put it on the rating scale"))  # fmt: skip
        return None, problems
    if benchmark is not None and _name(benchmark) != _name(mapping.benchmark):
        problems.append(Problem(BENCHMARK_MISMATCH, "prior.benchmark",
                                f"is {benchmark!r} but the arena's prior_mapping converts "
                                f"{mapping.benchmark!r}: a figure on another benchmark cannot "
                                "go through this mapping; give the figure on "
                                f"{mapping.benchmark!r}, or leave the prior out"))  # fmt: skip
    rating = None if value is None else _mapped(mapping, value, stated, problems)
    if problems:
        return None, problems
    return Prior(value, source, rating, mapping.benchmark, accessed), []


def _mapped(mapping: PriorMapping, value: float, stated: float | None,
            problems: list[Problem]) -> float:  # fmt: skip
    """The value's rating, with what is wrong with it added to ``problems``."""
    rating = mapping.rating(value)
    back = mapping.value(rating) if math.isfinite(rating) else math.nan
    if not _close(back, value):
        problems.append(Problem(NO_ROUND_TRIP, "prior.value",
                                f"does not round-trip through the arena's prior_mapping: value "
                                f"{value:g} -> rating {rating:g} -> value {back:g}"))  # fmt: skip
    elif abs(rating - ANCHOR) > MAX_PRIOR_OFFSET:
        problems.append(Problem(NO_ROUND_TRIP, "prior.value",
                                f"maps to rating {rating:.1f}, more than {MAX_PRIOR_OFFSET:g} "
                                f"points from {ANCHOR:g}: check the prior_mapping's center and "
                                "points_per_unit"))  # fmt: skip
    if stated is not None and not abs(stated - rating) <= STATED_RATING_TOLERANCE:
        problems.append(Problem(NO_ROUND_TRIP, "prior.rating",
                                f"states {stated:g} but the arena's prior_mapping gives "
                                f"{rating:.2f} for value {value:g}"))  # fmt: skip
    return rating


def _source(raw: Any, problems: list[Problem]) -> str | None:
    """A URL (http or https, with a host) or a citation; a missing one is reported."""
    if not isinstance(raw, str) or not raw.strip():
        got = "nothing" if raw is None or raw == "" else shown(raw)
        problems.append(Problem(NO_SOURCE, "prior.source", "is required: the URL or citation "
                                f"where the figure was published, got {got}"))  # fmt: skip
        return None
    source = raw.strip()
    if "://" in source and not http_url(source):
        problems.append(Problem(NO_SOURCE, "prior.source", f"{source!r} is not an http(s) "
                                "URL with a host; give a link readers can open, or a "
                                "citation"))  # fmt: skip
        return None
    return source


def _accessed(raw: Any, problems: list[Problem], today: date | None) -> date | None:
    """The ISO date the figure was read (YAML may already have parsed it into a date)."""
    if raw is None:
        problems.append(Problem(INVALID, "prior.accessed", "is required: the date (YYYY-MM-DD) "
                                "the figure was read from its source; a prior written before "
                                "this field existed needs it: re-read the source, check the "
                                "figure, and add the date"))  # fmt: skip
        return None
    day = None
    if isinstance(raw, date) and not isinstance(raw, datetime):
        day = raw
    elif isinstance(raw, str) and _ISO_DATE.match(raw.strip()):
        with contextlib.suppress(ValueError):  # e.g. 2026-02-30: reported below
            day = date.fromisoformat(raw.strip())
    if day is None:
        problems.append(Problem(INVALID, "prior.accessed",
                                f"must be a date YYYY-MM-DD, got {raw!r}"))  # fmt: skip
    elif today is not None and day > today + _TIME_ZONES:
        problems.append(Problem(INVALID, "prior.accessed",
                                f"is {day.isoformat()}, after today ({today.isoformat()})"))  # fmt: skip
        return None
    return day


def _read(problems: list[Problem], kind: str, reader: Callable, *args, **kwargs) -> Any:
    """One field through a registry reader; its error becomes a problem, the value None."""
    try:
        return reader(*args, **kwargs)
    except RegistryError as exc:
        problems.append(Problem(kind, exc.field, exc.message))
        return None


def _unknown_keys(raw: Mapping, allowed: set[str], prefix: str) -> list[Problem]:
    listed = ", ".join(sorted(allowed))
    return [Problem(INVALID, f"{prefix}{key}", f"unknown key; allowed: {listed}")
            for key in raw if key not in allowed]  # fmt: skip


def _name(benchmark: str) -> str:
    """A benchmark's name for comparison: case and runs of spaces do not matter."""
    return " ".join(benchmark.split()).casefold()


def _close(got: float, want: float) -> bool:
    return math.isfinite(got) and abs(got - want) <= ROUND_TRIP_TOLERANCE * max(1.0, abs(want))
