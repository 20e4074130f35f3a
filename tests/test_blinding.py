"""Each property of blind delivery, on synthetic speech-like clips whose numbers are known.

Loudness is checked with pyloudnorm's own meter (an independent implementation of
ITU-R BS.1770-4), never with the module's.
"""

from dataclasses import replace

import numpy as np
import pyloudnorm
import pytest
from fakes import full_disk
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.backends import OutputCache
from arena_core.backends.output import Output
from arena_core.space.blinding import (
    MAX_LIMIT_DB,
    SAFETY_CEILING_DB,
    Blinder,
    BlindingError,
    BlindingParams,
    blind,
    deliver,
    loudness,
    shape,
    speech_bounds,
)

PARAMS = BlindingParams()


def speech_like(rate, seconds, level, lead=0.0, trail=0.0, pulses=0.0, seed=0):
    """Noise shaped by a syllable-rate envelope (or a pulse train), between silences, as int16."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    envelope = 0.55 + 0.45 * np.sin(2 * np.pi * 4 * t)
    body = rng.normal(0, 1, len(t)) * envelope
    if pulses:  # a buzzy voice: sharp pulses every 8 ms
        body = body + (np.arange(len(t)) % int(0.008 * rate) == 0) * pulses
    body *= level / np.max(np.abs(body))
    x = np.concatenate([np.zeros(int(lead * rate)), body, np.zeros(int(trail * rate))])
    return Output.from_audio(rate, np.round(x * 32767).astype(np.int16))


def as_float(output):
    return output.samples / 32767


def bs1770(output):
    return pyloudnorm.Meter(output.sample_rate).integrated_loudness(as_float(output))


@pytest.fixture
def pair():
    return [speech_like(16_000, 1.2, 0.9, lead=0.4, trail=0.5, seed=1),
            speech_like(22_050, 2.0, 0.05, lead=0.02, trail=0.0, seed=2)]  # fmt: skip


def test_every_clip_of_a_battle_has_the_one_rate_and_one_length(pair):
    a, b = blind(pair, PARAMS, np.random.default_rng(0))
    assert a.sample_rate == b.sample_rate == PARAMS.sample_rate
    assert len(a.samples) == len(b.samples)


def test_loudness_is_within_half_a_lu_of_the_target(pair):
    rng = np.random.default_rng(1)
    for _ in range(5):
        for clip in blind(pair, PARAMS, rng):
            assert abs(bs1770(clip) - PARAMS.loudness) <= 0.5


def test_silence_is_trimmed_to_the_same_margin(pair):
    """The first sample above the dither noise sits after margin..margin+jitter of silence."""
    rate = PARAMS.sample_rate
    for seed in range(5):
        for clip in blind(pair, PARAMS, np.random.default_rng(seed)):
            loud = np.flatnonzero(np.abs(clip.samples) > 8)
            lead = loud[0] / rate
            assert PARAMS.margin - 0.012 <= lead <= PARAMS.margin + PARAMS.margin_jitter + 0.012
    a, b = blind(pair, PARAMS, np.random.default_rng(0))
    longer = max((a, b), key=lambda c: np.flatnonzero(np.abs(c.samples) > 8)[-1])
    trail = (len(longer.samples) - np.flatnonzero(np.abs(longer.samples) > 8)[-1]) / rate
    assert PARAMS.margin - 0.012 <= trail <= PARAMS.margin + PARAMS.margin_jitter + 0.012


def test_the_trailing_margin_has_its_own_random_share():
    """The silence after the speech is ``margin`` plus a random share of ``margin_jitter``,
    drawn per delivery: a fixed trail would give away the longer clip's exact speech length
    (clip length minus the trail). A flat block stands in for shaped speech, so its end is
    exact to the sample."""
    rate = PARAMS.sample_rate
    block = Output.from_audio(rate, np.full(rate, 10_000, dtype=np.int16))
    rng = np.random.default_rng(9)
    trails = []
    for _ in range(40):
        (clip,) = deliver([block], PARAMS, rng)
        trails.append(
            (len(clip.samples) - 1 - np.flatnonzero(np.abs(clip.samples) > 100)[-1]) / rate
        )
    trails = np.array(trails)
    low, high = PARAMS.margin, PARAMS.margin + PARAMS.margin_jitter
    assert np.all((trails >= low - 1 / rate) & (trails <= high + 1 / rate))
    # Spread over the range (uniform: each quarter end is missed by 40 draws with p = 1e-5).
    assert trails.min() < low + 0.25 * PARAMS.margin_jitter
    assert trails.max() > high - 0.25 * PARAMS.margin_jitter


def test_the_silence_is_dithered_afresh_on_every_delivery(pair):
    """Every sample carries its own dither, the margins and padding too: exact digital zeros
    would mark where a clip was padded (and which engines gate their silence), and the same
    silence twice would be bytes a client could match. Triangular dither of +-1 LSB over
    silence rounds to +-1 about a quarter of the time, and never further."""
    rate = PARAMS.sample_rate
    edge = round(PARAMS.margin * rate)  # the margins are at least this long, both ends
    rng = np.random.default_rng(10)
    first, second = blind(pair, PARAMS, rng), blind(pair, PARAMS, rng)
    for clip in (*first, *second):
        for silence in (clip.samples[:edge], clip.samples[-edge:]):
            assert np.max(np.abs(silence)) == 1  # there, and far below anything audible
            assert np.mean(silence != 0) == pytest.approx(1 / 4, abs=0.04)
    for one, other in zip(first, second, strict=True):
        assert not np.array_equal(one.samples[:edge], other.samples[:edge])
        assert not np.array_equal(one.samples[-edge:], other.samples[-edge:])


def quiet_then_loud(rate=16_000, seed=0):
    """0.2 s of silence, 0.5 s of quiet speech 30 dB under the 1.0 s of loud speech that
    follows (well above the -45 dB silence threshold), 0.2 s of silence."""
    rng = np.random.default_rng(seed)
    quiet = rng.normal(0, 1, rate // 2) * 0.3 * 10 ** (-30 / 20)
    loud = rng.normal(0, 1, rate) * 0.3
    silence = np.zeros(rate // 5)
    x = np.concatenate([silence, quiet, loud, silence])
    return Output.from_audio(rate, np.round(x / np.abs(x).max() * 0.9 * 32767).astype(np.int16))


def test_quiet_speech_above_the_silence_threshold_is_kept():
    """Only frames more than ``silence_db`` (-45 dB) under the loudest are silence: a soft
    opening syllable 30 dB down is speech, and trimming must not cut it off."""
    clip = quiet_then_loud()
    start, stop = speech_bounds(clip.samples / 32767, clip.sample_rate, PARAMS.silence_db)
    assert (start, stop) == (3200, 3200 + 24_000)  # 0.2 s in, 1.5 s long: 10 ms frames
    shaped = shape(clip, PARAMS)
    assert len(shaped.samples) / shaped.sample_rate == pytest.approx(1.5, abs=0.011)


def test_the_shaped_clip_cache_keeps_apart_what_shapes_differently(tmp_path):
    """A shaped clip is reused only for the same samples at the same rate under the same
    shaping settings: another ``silence_db`` trims differently, and the same samples at
    another rate are another sound (another length); reusing either served a wrong clip."""
    clip = quiet_then_loud()
    cache = OutputCache(tmp_path)
    strict = replace(PARAMS, silence_db=-20.0)  # the quiet opening is silence now
    assert Blinder(PARAMS, cache=cache).prepare(clip).to_bytes() == shape(clip, PARAMS).to_bytes()
    assert Blinder(strict, cache=cache).prepare(clip).to_bytes() == shape(clip, strict).to_bytes()
    assert len(shape(clip, strict).samples) < len(shape(clip, PARAMS).samples)
    slower = Output.from_audio(8000, clip.samples)  # the same samples, twice as long
    assert (
        Blinder(PARAMS, cache=cache).prepare(slower).to_bytes() == shape(slower, PARAMS).to_bytes()
    )
    assert len(shape(slower, PARAMS).samples) > len(shape(clip, PARAMS).samples)


def test_the_same_model_and_prompt_never_give_the_same_bytes(pair):
    rng = np.random.default_rng(2)
    files = {clip.to_bytes() for _ in range(20) for clip in blind([pair[0], pair[0]], PARAMS, rng)}
    assert len(files) == 40


def test_peaks_land_on_the_ceiling_within_the_loudness_jitter():
    """Clips whose crest factor is within the limiter's reach all peak at the ceiling."""
    clips = [speech_like(24_000, 2.0, level, seed=s, pulses=2.0 * (s % 2))
             for s, level in enumerate((0.9, 0.1, 0.5, 0.02))]  # fmt: skip
    for clip in blind(clips, PARAMS, np.random.default_rng(3)):
        peak_db = 20 * np.log10(np.max(np.abs(as_float(clip))))
        assert peak_db <= SAFETY_CEILING_DB
        assert abs(peak_db - PARAMS.ceiling) <= PARAMS.loudness_jitter + 0.05


def test_limited_peaks_land_exactly_on_the_ceiling_before_the_jitter():
    """Shaped (before the per-delivery loudness offset), every clip the limiter reaches
    peaks on the ceiling to a hundredth of a dB: the peak level is the same for all of them."""
    clips = [speech_like(rate, 2.0, level, seed=s, pulses=2.0 * (s % 2))
             for s, (rate, level) in enumerate([(24_000, 0.9), (16_000, 0.1), (22_050, 0.5),
                                                (44_100, 0.02)])]  # fmt: skip
    for clip in clips:
        peak_db = 20 * np.log10(np.max(np.abs(as_float(shape(clip, PARAMS)))))
        assert peak_db == pytest.approx(PARAMS.ceiling, abs=0.01)


def test_a_buzzier_voice_is_limited_by_at_most_the_limiters_depth():
    """Peaks far above the ceiling come down by MAX_LIMIT_DB, not onto it (the voice would change)."""
    source = speech_like(24_000, 2.0, 0.5, pulses=60.0)
    (clip,) = blind([source], PARAMS, np.random.default_rng(7))
    crest_before = 20 * np.log10(np.max(np.abs(as_float(source)))) - bs1770(source)
    crest_after = 20 * np.log10(np.max(np.abs(as_float(clip)))) - bs1770(clip)
    assert crest_after > PARAMS.ceiling - PARAMS.loudness
    assert crest_before - crest_after <= MAX_LIMIT_DB + 0.5


def test_a_clip_too_flat_for_the_ceiling_keeps_its_loudness():
    """A square-ish clip (crest below the headroom) is not limited and still meets the target."""
    rate = 24_000
    square = np.sign(np.sin(2 * np.pi * 200 * np.arange(rate) / rate)) * 0.5
    (clip,) = blind([Output.from_audio(rate, (square * 32767).astype(np.int16))], PARAMS,
                    np.random.default_rng(4))  # fmt: skip
    assert abs(bs1770(clip) - PARAMS.loudness) <= 0.5


@settings(max_examples=25, deadline=None)
@given(rate=st.sampled_from([8000, 16_000, 22_050, 24_000, 44_100]),
       seconds=st.floats(0.05, 6.0), seed=st.integers(0, 2**16))  # fmt: skip
def test_loudness_agrees_with_pyloudnorm(rate, seconds, seed):
    x = as_float(speech_like(rate, seconds, 0.5, seed=seed))
    padded = np.concatenate([x, np.zeros(max(0, int(0.41 * rate) + 2 - len(x)))])
    expected = pyloudnorm.Meter(rate).integrated_loudness(padded)
    assert loudness(x, rate) == pytest.approx(expected, abs=1e-6)


def test_silence_and_other_modalities():
    # Backends cannot return silence any more (Output.from_audio refuses it); built directly,
    # it still must not break a delivery.
    silent = Output(modality="audio", sample_rate=16_000, samples=np.zeros(8000, dtype=np.int16))
    a, b = blind([silent, speech_like(16_000, 1.0, 0.5)], PARAMS, np.random.default_rng(5))
    assert len(a.samples) == len(b.samples) and np.max(np.abs(a.samples)) <= 1
    blinder = Blinder(PARAMS)
    texts = (Output.from_text("one"), Output.from_text("two"))
    assert blinder.blind(texts) == texts
    with pytest.raises(BlindingError):
        blinder.blind([texts[0], silent])


def test_the_blinder_shapes_once_and_delivers_fresh_bytes(tmp_path, pair):
    cache = OutputCache(tmp_path)
    blinder = Blinder(PARAMS, cache=cache, rng=np.random.default_rng(6))
    first = blinder.blind(pair)
    stored = cache.total_bytes
    second = blinder.blind(pair)
    assert cache.total_bytes == stored > 0  # shaped clips came from the cache
    assert all(x.to_bytes() != y.to_bytes() for x, y in zip(first, second, strict=True))


def test_params_are_checked():
    for bad in (
        {"sample_rate": 4000},
        {"loudness": -5.0},
        {"loudness_jitter": 0.6},
        {"margin": -1},
    ):
        with pytest.raises(ValueError, match=r"must be|invalid"):
            BlindingParams(**bad)


def test_quantise_dither_is_triangular_unbiased_and_fresh_per_draw():
    from arena_core.space.blinding import INT16_FULL_SCALE
    from arena_core.space.dither import to_int16, tpdf_dither

    def quantise(x, rng):  # floats in [-1, 1] to int16, dithered, as delivery does it
        return to_int16(tpdf_dither(rng, len(x)) + x * np.float32(INT16_FULL_SCALE))

    n = 200_000
    silent = quantise(np.zeros(n, dtype=np.float32), np.random.default_rng(1))
    # Triangular dither of ±1 LSB over an exact 0 rounds to -1 or +1 when |d| > 1/2: an eighth
    # of the time each way ((1/2)² / 2), zero otherwise.
    shares = [np.mean(silent == v) for v in (-1, 0, 1)]
    assert set(np.unique(silent)) == {-1, 0, 1}
    assert shares == pytest.approx([1 / 8, 3 / 4, 1 / 8], abs=0.006)
    level = np.full(n, 0.3 / INT16_FULL_SCALE, dtype=np.float32)  # 0.3 LSB: dither keeps it
    assert quantise(level, np.random.default_rng(2)).mean() == pytest.approx(0.3, abs=0.01)
    loud = quantise(np.array([1.0, -1.0, 2.0, -2.0], dtype=np.float32), np.random.default_rng(3))
    assert loud.dtype == np.int16 and loud.min() >= -INT16_FULL_SCALE - 1
    assert loud.max() <= INT16_FULL_SCALE
    again = quantise(np.zeros(n, dtype=np.float32), np.random.default_rng(4))
    assert not np.array_equal(silent, again)  # other draws, other bytes


def test_a_clip_prepared_with_its_cache_key_is_found_by_that_key_alone(tmp_path, pair):
    blinder = Blinder(PARAMS, cache=OutputCache(tmp_path), rng=np.random.default_rng(7))
    first, second = pair
    shaped = blinder.prepare(first, "source-of-first")
    assert blinder.shaped("source-of-first").to_bytes() == shaped.to_bytes()
    assert blinder.shaped("source-of-second") is None
    blinder.prepare(second)  # without a key: kept under a hash of its samples only
    assert blinder.shaped("source-of-second") is None
    assert Blinder(PARAMS).shaped("source-of-first") is None  # no cache, nothing kept
    other = Blinder(replace(PARAMS, loudness=-20.0), cache=OutputCache(tmp_path))
    assert other.shaped("source-of-first") is None  # other settings, other shapes


def test_a_shaped_clip_cut_short_is_shaped_again_and_a_full_disk_fails_nothing(
    tmp_path, pair, monkeypatch
):
    """A cut-short shaped clip raised numpy's ValueError out of every battle that drew it (odd
    cut) or was delivered short (even cut); a failed write raised OSError out of prepare."""
    first = Blinder(PARAMS, cache=OutputCache(tmp_path)).prepare(pair[0], "source")
    for cut in (1, 0):  # odd, then even bytes short of half
        (path,) = tmp_path.glob("*.wav")
        path.write_bytes(first.to_bytes()[: len(first.to_bytes()) // 2 | cut])
        restarted = Blinder(PARAMS, cache=OutputCache(tmp_path))
        assert restarted.shaped("source") is None  # never served short
        assert restarted.prepare(pair[0], "source").to_bytes() == first.to_bytes()
    full_disk(monkeypatch)
    unwritable = Blinder(PARAMS, cache=OutputCache(tmp_path / "full"))
    assert unwritable.prepare(pair[1], "other").to_bytes() == shape(pair[1], PARAMS).to_bytes()
    assert len(unwritable.blind(pair)) == 2
