"""Priors in the registry: source, benchmark, date read, and a mapping that round-trips.

Expected ratings are worked by hand from ``1000 + points_per_unit * (value - center)``
or computed exactly with ``fractions.Fraction``, never by the mapping under test.
"""

import textwrap
from datetime import date
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from arena_core.registry import RegistryError, load_registry, parse_registry
from arena_core.registry.fields import Ctx
from arena_core.registry.priors import (
    BENCHMARK_MISMATCH,
    INVALID,
    MAX_PRIOR_OFFSET,
    NO_ROUND_TRIP,
    NO_SOURCE,
    PriorMapping,
    read_mapping,
    read_prior,
)

SOURCE = "https://example.org/paper#table-2"
MAPPING = "{benchmark: TTS quality index, center: 82, points_per_unit: 8}"
PRIOR = f"{{value: 86.5, source: '{SOURCE}', accessed: 2026-03-01}}"


def registry(prior: str = PRIOR, mapping: str = MAPPING) -> str:
    return textwrap.dedent(f"""
        arenas:
          - id: tts
            title: TTS
            modality: audio
            prior_mapping: {mapping}
            prompts: [{{id: p1, text: Hi}}]
            models:
              - {{id: a, name: A, backend: {{type: fake}}, prior: {prior}}}
              - {{id: b, name: B, backend: {{type: fake}}}}
        """)


def load(tmp_path, text: str):
    path = tmp_path / "registry.yaml"
    path.write_text(text)
    return load_registry(path)


def error(tmp_path, text: str) -> RegistryError:
    with pytest.raises(RegistryError) as err:
        load(tmp_path, text)
    return err.value


def test_a_prior_carries_value_source_benchmark_date_and_rating(tmp_path):
    prior = load(tmp_path, registry()).arena("tts").model("a").prior
    assert prior.value == 86.5 and prior.source == SOURCE
    assert prior.rating == 1036.0  # 1000 + 8 x (86.5 - 82), by hand
    assert prior.benchmark == "TTS quality index"  # left out: the mapping's benchmark
    assert prior.accessed == date(2026, 3, 1)
    assert prior.to_json()["accessed"] == "2026-03-01"


def test_optional_fields_that_agree_are_accepted(tmp_path):
    text = registry("{value: 86.5, source: 'Doe et al., A TTS study, 2025, table 2', "
                    "accessed: '2026-03-01', benchmark: '  tts  QUALITY index', rating: 1036.04}")  # fmt: skip
    prior = load(tmp_path, text).arena("tts").model("a").prior
    assert prior.benchmark == "TTS quality index" and prior.source.startswith("Doe et al.")


def test_a_negative_slope_serves_a_benchmark_where_lower_is_better(tmp_path):
    text = registry(f"{{value: 4.0, source: '{SOURCE}', accessed: 2026-03-01}}",
                    "{benchmark: word error rate (%), center: 6, points_per_unit: -25}")  # fmt: skip
    assert load(tmp_path, text).arena("tts").model("a").prior.rating == 1050.0  # 1000 - 25 x -2


BAD_PRIORS = [
    # (prior, field, words in the message)
    ("{value: 86.5, accessed: 2026-03-01}", "prior.source", "the URL or citation"),
    ("{value: 86.5, source: '', accessed: 2026-03-01}", "prior.source", "the URL or citation"),
    ("{value: 86.5, source: 'ftp://example.org/t', accessed: 2026-03-01}", "prior.source", "http(s)"),
    ("{value: 86.5, source: 'https://', accessed: 2026-03-01}", "prior.source", "with a host"),
    (f"{{value: 86.5, source: '{SOURCE}'}}", "prior.accessed", "add the date"),
    (f"{{value: 86.5, source: '{SOURCE}', accessed: 2026-02-30}}", "prior.accessed", "YYYY-MM-DD"),
    (f"{{value: 86.5, source: '{SOURCE}', accessed: '1 March 2026'}}", "prior.accessed", "YYYY-MM-DD"),
    (f"{{value: 86.5, source: '{SOURCE}', accessed: 2026-03-01 10:00:00}}", "prior.accessed", "YYYY-MM-DD"),
    (f"{{value: .inf, source: '{SOURCE}', accessed: 2026-03-01}}", "prior.value", "finite"),
    (f"{{value: high, source: '{SOURCE}', accessed: 2026-03-01}}", "prior.value", "a number"),
    (f"{{value: 86.5, source: '{SOURCE}', accessed: 2026-03-01, benchmark: MOS}}", "prior.benchmark",
     "'MOS' but the arena's prior_mapping converts 'TTS quality index'"),
    (f"{{value: 86.5, source: '{SOURCE}', accessed: 2026-03-01, rating: 1040}}", "prior.rating",
     "states 1040 but the arena's prior_mapping gives 1036.00"),
    (f"{{value: 400, source: '{SOURCE}', accessed: 2026-03-01}}", "prior.value",
     "more than 2000 points"),  # 1000 + 8 x 318 = 3544
    (f"{{value: 86.5, source: '{SOURCE}', accessed: 2026-03-01, url: x}}", "prior.url", "unknown key"),
    ("86.5", "prior", "must be a mapping"),
]  # fmt: skip


@pytest.mark.parametrize(("prior", "field", "words"), BAD_PRIORS)
def test_bad_priors_are_refused_naming_the_model_and_field(tmp_path, prior, field, words):
    e = error(tmp_path, registry(prior))
    assert (e.arena, e.model, e.field) == ("tts", "a", field)
    assert words in str(e)


BAD_MAPPINGS = [
    ("{benchmark: Q, center: 82, points_per_unit: 0}", "prior_mapping.points_per_unit", "other than 0"),
    ("{benchmark: Q, center: 82, points_per_unit: .inf}", "prior_mapping.points_per_unit", "finite"),
    ("{benchmark: Q, center: 82, points_per_unit: 1.0e+300}", "prior_mapping.points_per_unit",
     "does not round-trip"),
    ("{benchmark: Q, center: -.inf, points_per_unit: 8}", "prior_mapping.center", "finite"),
    ("{benchmark: Q, center: 82}", "prior_mapping.points_per_unit", "must be a number"),
    ("{center: 82, points_per_unit: 8}", "prior_mapping.benchmark", "non-empty string"),
    ("{benchmark: Q, center: 82, points_per_unit: 8, slope: 2}", "prior_mapping.slope", "unknown key"),
]  # fmt: skip


@pytest.mark.parametrize(("mapping", "field", "words"), BAD_MAPPINGS)
def test_bad_mappings_are_refused_naming_the_arena_and_field(tmp_path, mapping, field, words):
    e = error(tmp_path, registry(mapping=mapping))
    assert (e.arena, e.model, e.field) == ("tts", None, field)
    assert words in str(e)


def test_a_registry_written_before_the_date_field_gets_a_clear_error(tmp_path):
    """The old form {value, source} cannot load: no date can be assumed for it."""
    e = error(tmp_path, registry(f"{{value: 86.5, source: '{SOURCE}'}}"))
    assert e.field == "prior.accessed" and "re-read the source" in str(e)


def test_each_problem_has_its_kind():
    ctx = Ctx(file=None, base_dir=None)
    mapping = PriorMapping("Q", 82.0, 8.0)
    kinds = {
        NO_SOURCE: {"value": 86.5, "accessed": "2026-03-01"},
        BENCHMARK_MISMATCH: {"value": 86.5, "source": SOURCE, "accessed": "2026-03-01",
                             "benchmark": "MOS"},
        NO_ROUND_TRIP: {"value": 86.5, "source": SOURCE, "accessed": "2026-03-01", "rating": 1},
        INVALID: {"value": 86.5, "source": SOURCE},
    }  # fmt: skip
    for kind, raw in kinds.items():
        prior, problems = read_prior(ctx, raw, mapping)
        assert prior is None and [p.kind for p in problems] == [kind], kind
    _, problems = read_prior(ctx, {"value": 1e9, "rating": 2}, mapping)
    assert [p.kind for p in problems] == [NO_SOURCE, INVALID, NO_ROUND_TRIP, NO_ROUND_TRIP]
    # A prior in an arena whose mapping is broken is not blamed for the missing mapping.
    _, problems = read_prior(ctx, kinds[INVALID] | {"accessed": "2026-03-01"}, None,
                             mapping_broken=True)  # fmt: skip
    assert problems == []


def test_a_date_read_in_the_future_is_refused_only_when_told_today():
    ctx = Ctx(file=None, base_dir=None)
    raw = {"value": 86.5, "source": SOURCE, "accessed": "2026-03-03"}
    mapping = PriorMapping("Q", 82.0, 8.0)
    assert read_prior(ctx, raw, mapping)[0] is not None  # the loader has no clock
    assert read_prior(ctx, raw, mapping, today=date(2026, 3, 2))[0] is not None  # time zones
    _, problems = read_prior(ctx, raw, mapping, today=date(2026, 3, 1))
    assert [(p.kind, p.field) for p in problems] == [(INVALID, "prior.accessed")]


def test_parse_registry_takes_a_yaml_date_object():
    data = {"arenas": [{"id": "t", "title": "T", "modality": "text",
                        "prior_mapping": {"benchmark": "Q", "center": 0, "points_per_unit": 10},
                        "prompts": [{"id": "p", "text": "x"}],
                        "models": [{"id": "m", "name": "M", "backend": {"type": "fake"},
                                    "prior": {"value": 3, "source": SOURCE,
                                              "accessed": date(2025, 12, 31)}}]}]}  # fmt: skip
    assert parse_registry(data).arena("t").model("m").prior.rating == 1030.0


# --- Round trip -----------------------------------------------------------------------------

centers = st.floats(-1e4, 1e4, allow_nan=False)
slopes = st.floats(1e-3, 1e4).flatmap(lambda s: st.sampled_from([s, -s]))


@settings(max_examples=300, deadline=None)
@given(center=centers, slope=slopes, offset=st.floats(-MAX_PRIOR_OFFSET, MAX_PRIOR_OFFSET))
def test_sane_mappings_round_trip_and_rate_exactly(center, slope, offset):
    """Any value whose exact rating lies on the plausible scale is accepted, maps to that
    rating (to float precision) and comes back; checked against exact rational arithmetic."""
    value = center + offset / slope
    exact = 1000 + Fraction(slope) * (Fraction(value) - Fraction(center))
    assume(abs(exact - 1000) <= MAX_PRIOR_OFFSET - 1e-6)
    ctx = Ctx(file=None, base_dir=None)
    mapping, problems = read_mapping(ctx, {"benchmark": "Q", "center": center,
                                           "points_per_unit": slope})  # fmt: skip
    assert problems == []
    prior, problems = read_prior(ctx, {"value": value, "source": SOURCE,
                                       "accessed": "2026-01-01"}, mapping)  # fmt: skip
    assert problems == []
    assert abs(prior.rating - float(exact)) <= 1e-9 * max(1.0, abs(float(exact)))
    assert abs(mapping.value(prior.rating) - value) <= 1e-9 * max(1.0, abs(value))


@settings(max_examples=300, deadline=None)
@given(center=centers, slope=slopes, value=st.floats(-1e6, 1e6, allow_nan=False))
def test_an_accepted_prior_is_always_on_the_scale(center, slope, value):
    """Whatever the figure, a prior the reader accepts has an exact rating within the bound."""
    ctx = Ctx(file=None, base_dir=None)
    mapping, _ = read_mapping(ctx, {"benchmark": "Q", "center": center, "points_per_unit": slope})
    prior, problems = read_prior(ctx, {"value": value, "source": SOURCE,
                                       "accessed": "2026-01-01"}, mapping)  # fmt: skip
    exact = 1000 + Fraction(slope) * (Fraction(value) - Fraction(center))
    if prior is not None:
        assert abs(exact - 1000) <= MAX_PRIOR_OFFSET + Fraction(1, 10**6)
    else:
        assert {p.kind for p in problems} == {NO_ROUND_TRIP}


@given(slope=st.sampled_from([0.0, float("inf"), float("-inf"), 1e300, -1e300, 1e200]))
def test_zero_non_finite_and_absurd_slopes_do_not_round_trip(slope):
    _, problems = read_mapping(Ctx(file=None, base_dir=None),
                               {"benchmark": "Q", "center": 82, "points_per_unit": slope})  # fmt: skip
    assert [(p.kind, p.field) for p in problems] == [
        (NO_ROUND_TRIP, "prior_mapping.points_per_unit")
    ]
