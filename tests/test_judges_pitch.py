"""The YIN pitch tracker on signals whose pitch is known by construction."""

from __future__ import annotations

import numpy as np
import pytest

from arena_core.judges import pitch

RATE = 24_000


def harmonic(f0: np.ndarray, rate: int = RATE, harmonics: int = 5) -> np.ndarray:
    """A voiced-like signal: the first harmonics (1/k amplitudes) of the F0 contour given per sample."""
    phase = 2 * np.pi * np.cumsum(f0) / rate
    return 0.3 * sum(np.sin(k * phase) / k for k in range(1, harmonics + 1))


@pytest.mark.parametrize("f0", [80.0, 150.0, 220.0, 400.0])
def test_a_steady_tone_is_voiced_throughout_at_its_f0(f0):
    track = pitch.f0_track(harmonic(np.full(RATE, f0)), RATE)
    assert np.isfinite(track).all()
    np.testing.assert_allclose(track, f0, rtol=0.005)


def test_a_glide_of_one_octave_spans_twelve_semitones():
    # 110 -> 220 Hz, exponential over 2 s: linear in semitones, so the frames' semitones are
    # uniform on [0, 12] and their 10th-90th percentile range is 0.8 * 12 = 9.6 semitones
    # (frames near the ends, whose window runs past the clip, shave a little off).
    t = np.arange(2 * RATE) / RATE
    track = pitch.f0_track(harmonic(110 * 2 ** (t / 2)), RATE)
    semitones = 12 * np.log2(track[np.isfinite(track)] / 110)
    assert np.isfinite(track).mean() > 0.95
    low, high = np.percentile(semitones, [10, 90])
    assert high - low == pytest.approx(9.6, abs=0.4)
    assert low == pytest.approx(1.2, abs=0.4)


def test_noise_and_silence_are_unvoiced():
    noise = np.random.default_rng(0).normal(0, 0.1, RATE)
    assert not np.isfinite(pitch.f0_track(noise, RATE)).any()
    assert not np.isfinite(pitch.f0_track(np.zeros(RATE), RATE)).any()


def test_quiet_frames_are_unvoiced_whatever_their_shape():
    # The second half is the same tone 50 dB down: below VOICING_FLOOR_DB (-40 dB).
    tone = harmonic(np.full(RATE, 150.0))
    track = pitch.f0_track(np.concatenate([tone, tone * 10 ** (-50 / 20)]), RATE)
    frames = len(track)
    assert np.isfinite(track[: frames // 2 - 5]).all()
    assert not np.isfinite(track[frames // 2 + 5 :]).any()


def test_a_clip_shorter_than_one_frame_has_no_frames():
    assert len(pitch.f0_track(np.ones(100), RATE)) == 0


@pytest.mark.parametrize(("rate", "target"), [(48_000, 16_000), (8_000, 16_000), (22_050, 16_000)])
def test_resampling_keeps_a_tone_and_its_level(rate, target):
    # A 440 Hz tone lasting a whole number of its periods (so its periodic extension is seamless).
    n = rate  # one second: 440 whole periods
    x = np.sin(2 * np.pi * 440 * np.arange(n) / rate)
    y = pitch.resample(x, rate, target)
    assert len(y) == target
    expected = np.sin(2 * np.pi * 440 * np.arange(target) / target)
    np.testing.assert_allclose(y, expected, atol=1e-9)
