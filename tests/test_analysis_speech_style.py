"""Style features of a clip: spans and pauses of synthetic clips whose answer is known by
construction, loudness against pyloudnorm's meter, prompt units counted by hand."""

from __future__ import annotations

import math

import numpy as np
import pyloudnorm
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena_core.analysis import speech_style as style
from arena_core.analysis.speech_style import SpeechStyle, prompt_units, speech_style
from arena_core.backends.output import Output, OutputError

RATE = 24_000


def clip(layout: list[tuple[str, float]], rate: int = RATE, amplitude: float = 0.3) -> Output:
    """Silence and 200 Hz tone in the order and lengths (seconds) given; each piece a whole
    number of 10 ms frames, so the active frames are known exactly."""
    pieces = []
    for kind, seconds in layout:
        n = round(seconds * rate)
        if kind == "tone":
            t = np.arange(n) / rate
            pieces.append(amplitude * np.sin(2 * np.pi * 200 * t))
        else:
            pieces.append(np.zeros(n))
    return Output.from_audio(rate, np.concatenate(pieces))


def test_duration_is_the_span_from_first_to_last_active_frame():
    # 0.3 s lead, 1.2 s speech, 0.5 s trail: the span is the 1.2 s.
    out = speech_style(clip([("gap", 0.3), ("tone", 1.2), ("gap", 0.5)]), "one two three")
    assert out.duration_s == pytest.approx(1.2)
    assert out.speech_rate == pytest.approx(3 / 1.2)


def test_pauses_lengthen_the_duration_but_not_the_rate():
    """Both clips read the same six words with 2 s of speech; one has two 0.5 s pauses.
    Duration 2.0 vs 3.0 s, articulation rate 3 words/s for both: rate is not units/duration."""
    prompt = "six words are read out here"
    plain = speech_style(clip([("gap", 0.2), ("tone", 2.0), ("gap", 0.2)]), prompt)
    paused = speech_style(
        clip(
            [
                ("gap", 0.2),
                ("tone", 0.7),
                ("gap", 0.5),
                ("tone", 0.6),
                ("gap", 0.5),
                ("tone", 0.7),
                ("gap", 0.2),
            ]
        ),
        prompt,
    )
    assert plain.duration_s == pytest.approx(2.0)
    assert paused.duration_s == pytest.approx(3.0)
    assert plain.speech_rate == pytest.approx(3.0)
    assert paused.speech_rate == pytest.approx(3.0)
    # Words over the whole span would have told them apart (3.0 vs 2.0 words/s).
    assert 6 / paused.duration_s != pytest.approx(paused.speech_rate)


def test_a_gap_shorter_than_a_pause_is_articulation():
    # 0.2 s < MIN_PAUSE_SECONDS (0.25): a stop closure, not a pause; 0.3 s is a pause.
    short = speech_style(clip([("tone", 1.0), ("gap", 0.2), ("tone", 1.0)]), "a b c d")
    long = speech_style(clip([("tone", 1.0), ("gap", 0.3), ("tone", 1.0)]), "a b c d")
    assert short.duration_s == pytest.approx(2.2)
    assert short.speech_rate == pytest.approx(4 / 2.2)
    assert long.duration_s == pytest.approx(2.3)
    assert long.speech_rate == pytest.approx(4 / 2.0)


def test_quiet_frames_above_the_silence_depth_are_active():
    # A tone 40 dB down is within SILENCE_DB (-45 dB) of the loud one: active, not a pause;
    # one 50 dB down is silence.
    loud, rate = 0.3, RATE
    t = np.arange(rate) / rate
    tone = np.sin(2 * np.pi * 200 * t)
    for drop_db, expected_active in ((40, 3.0), (50, 2.0)):
        quiet = loud * 10 ** (-drop_db / 20)
        x = np.concatenate([loud * tone, quiet * tone, loud * tone])
        _, active = style.active_seconds(Output.from_audio(rate, x).samples, rate)
        assert active == pytest.approx(expected_active), drop_db


def test_rate_is_none_without_units_and_duration_zero_for_silence():
    assert speech_style(clip([("tone", 1.0)]), "... !?").speech_rate is None
    silent = Output(modality="audio", sample_rate=RATE, samples=np.zeros(RATE, dtype=np.int16))
    assert speech_style(silent, "words here") == SpeechStyle(0.0, None, -math.inf)


def test_other_sample_rates_keep_their_frame_length():
    out = speech_style(clip([("gap", 0.25), ("tone", 1.5), ("gap", 0.25)], rate=16_000), "a b c")
    assert out.duration_s == pytest.approx(1.5)


def test_a_text_output_has_no_speech_style():
    with pytest.raises(OutputError, match="no speech style"):
        speech_style(Output.from_text("hello"), "hello")


@pytest.mark.parametrize("rate", [16_000, 22_050, 24_000, 44_100])
def test_loudness_is_pyloudnorms_integrated_loudness(rate):
    rng = np.random.default_rng(rate)
    x = (
        rng.normal(0, 0.05, 3 * rate)
        * np.repeat(rng.uniform(0.1, 1, 30), rate // 10 + 1)[: 3 * rate]
    )
    out = Output.from_audio(rate, x)
    floats = out.samples / 32767
    assert speech_style(out, "x").lufs == pytest.approx(
        pyloudnorm.Meter(rate).integrated_loudness(floats), abs=1e-6
    )


def test_a_clip_shorter_than_a_block_is_measured_with_silence_appended():
    # As blind delivery measures it: padded to one 400 ms gating block and a sample.
    out = clip([("tone", 0.2)])
    padded = np.concatenate(
        [out.samples / 32767, np.zeros(math.ceil(0.4 * RATE) + 1 - len(out.samples))]
    )
    expected = pyloudnorm.Meter(RATE).integrated_loudness(padded)
    assert speech_style(out, "x").lufs == pytest.approx(expected, abs=1e-6)


def test_the_compiled_and_scipy_loudness_paths_agree():
    pytest.importorskip("numba")
    rng = np.random.default_rng(7)
    samples = (rng.normal(0, 3000, 2 * RATE)).astype(np.int16)
    length = style.loudness_length(len(samples), RATE)
    stages = style.k_weighting(RATE)
    b = np.array([sb * gain for sb, _, gain in stages])
    a = np.array([sa for _, sa, _ in stages])
    compiled = style._compiled_energy()(samples, 1 / 32767, b, a, length)
    reference = style._energy_scipy(samples, stages, length)
    np.testing.assert_allclose(compiled, reference, rtol=1e-10)


@pytest.mark.parametrize(
    ("text", "units"),
    [
        ("The quick brown fox.", 4),
        ("Don't panic, it's well-known!", 4),  # contractions and hyphenated words are one each
        ("I paid $4.99 - twice.", 4),  # a number in figures is one unit; the dash is none
        ("1,000 or 2.5", 3),
        ("東京タワー", 5),  # two ideographs, three katakana (the long mark counts)
        ("今日は、いい天気ですね。", 10),  # punctuation 、。 counts nothing
        ("東京 Tower へ", 4),
        ("Grüße aus Köln", 3),
        ("  ", 0),
        ("... !?", 0),
    ],
)
def test_prompt_units(text, units):
    assert prompt_units(text) == units


@given(st.lists(st.sampled_from(["word", "東", "カ", "ひ", "don't"]), max_size=30))
def test_units_add_up_over_space_separated_pieces(pieces):
    assert prompt_units(" ".join(pieces)) == len(pieces)
