"""app.py's two server-time savers: clips written by us into Gradio's cache, and matplotlib's
missing import remembered (see bench/load.py for what they save)."""

import importlib.machinery
import importlib.util
import sys
import wave

import numpy as np
import pytest

import app
from arena_core.backends.output import Output
from arena_core.space.service import BattleView


def _view(modality="audio"):
    rng = np.random.default_rng(3)
    if modality == "audio":
        a, b = (Output.from_audio(24000, (rng.standard_normal(4800) * 3000).astype(np.int16))
                for _ in range(2))  # fmt: skip
    else:
        a, b = Output.from_text("first"), Output.from_text("second")
    return BattleView("h", "tts-en", modality, "Hello.", None, a, b)


def test_clips_are_wav_files_in_the_cache_under_new_random_names(tmp_path):
    view = _view()
    first, second = app._media(view, str(tmp_path)), app._media(view, str(tmp_path))
    paths = [v for v in first + second if v is not None]
    assert len(paths) == 4 and len(set(paths)) == 4  # a name per delivery, never reused
    for path, out in zip(paths, [view.output_a, view.output_b] * 2, strict=True):
        assert path.startswith(str(tmp_path)) and path.endswith(".wav")
        name = path.rsplit("/", 1)[1]
        assert "tts" not in name and len(name) >= 36  # random hex, nothing of the model
        with wave.open(path) as w:
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (24000, 1, 2)
            samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        np.testing.assert_array_equal(samples, out.samples)
    assert first[2:] == [None] * 4  # text and image players get nothing in a speech arena


def test_text_outputs_go_to_the_text_boxes_and_write_no_file(tmp_path):
    assert app._media(_view("text"), str(tmp_path)) == [None, None, "first", "second", None, None]
    assert not any(tmp_path.iterdir())


def test_a_missing_matplotlib_fails_its_import_at_once(monkeypatch):
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    app._forget_missing_matplotlib()
    assert sys.modules["matplotlib"] is None
    with pytest.raises(ImportError):
        import matplotlib  # noqa: F401


def test_an_installed_matplotlib_is_left_alone(monkeypatch):
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    spec = importlib.machinery.ModuleSpec("matplotlib", None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    app._forget_missing_matplotlib()
    assert "matplotlib" not in sys.modules


def test_the_player_serves_our_wav_without_probing_it(tmp_path, monkeypatch):
    from gradio import processing_utils

    from arena_core.page.clip import clip_player

    def no_probe(*args, **kwargs):
        raise AssertionError("ffmpeg/ffprobe consulted for a WAV file the app wrote")

    monkeypatch.setattr(processing_utils, "ffmpeg_installed", no_probe)
    monkeypatch.setattr(processing_utils, "audio_is_playable", no_probe)
    player = clip_player(interactive=False)
    path = app._media(_view(), str(tmp_path))[0]
    served = player.postprocess(path)
    assert served.path == path and served.orig_name is None
    assert player.get_block_name() == "audio"  # the browser's own audio player
    samples = (np.arange(2400) % 100 * 50).astype(np.int16)
    assert player.postprocess((24000, samples)).path.endswith(".wav")  # other values: gr.Audio's
