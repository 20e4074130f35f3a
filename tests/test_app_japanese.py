"""A Japanese battle through the launched app, driven with gradio_client as an API user would."""

import wave

import numpy as np
from gradio_client import Client

#: A short sentence of the arena's own set, so the battle is quick even with two Kokoro voices.
SHORT = "お湯が沸きましたよ。"


def test_a_japanese_battle_plays_both_sides_and_takes_the_vote(running_app):
    client = Client(running_app.url, analytics_enabled=False, verbose=False)
    japanese = {m.id for m in running_app.service.registry.arena("tts-ja").models}
    prompt, audio_a, audio_b, *_ = client.predict("tts-ja", SHORT, api_name="/new_battle")
    assert prompt == SHORT
    for path in (audio_a, audio_b):
        assert not any(model_id in path for model_id in japanese)
        with wave.open(path) as w:
            rate, samples = w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), np.int16)
        assert rate >= 16_000
        assert np.sqrt(np.mean(samples.astype(float) ** 2)) > 100  # speech, not silence
        assert 0.5 < len(samples) / rate < 6.0  # ten morae: about a second and a half
    _, reveal = client.predict("a", api_name="/vote")
    assert reveal["counted"]
    assert {reveal["model_a"]["id"], reveal["model_b"]["id"]} <= japanese
