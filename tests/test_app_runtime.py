"""app.py's server-time savers: clips kept by us in the clip store (served by its own route,
tests/test_space_clips.py), images written by us into Gradio's cache, serialised values for
the API events, and matplotlib's missing import remembered (see bench/load.py for what they
save)."""

import importlib.machinery
import importlib.util
import io
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from arena_core.backends.output import Output
from arena_core.page import media as battle_media
from arena_core.space import webstack
from arena_core.space.clips import ClipStore
from arena_core.space.service import BattleView


def _view(modality="audio"):
    rng = np.random.default_rng(3)
    if modality == "audio":
        a, b = (Output.from_audio(24000, (rng.standard_normal(4800) * 3000).astype(np.int16))
                for _ in range(2))  # fmt: skip
    elif modality == "image":
        a, b = (Output.from_image(_png(colour)) for colour in ("red", "blue"))
    else:
        a, b = Output.from_text("first"), Output.from_text("second")
    return BattleView("h", "tts-en", modality, "Hello.", None, a, b)


def _png(colour: str) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_clips_are_wav_clips_in_the_store_under_new_random_names(tmp_path):
    view = _view()
    clips = ClipStore(tmp_path / "clips", 2**20)
    first, second = (battle_media.values(view, clips, str(tmp_path)) for _ in range(2))
    paths = [v for v in first + second if v is not None]
    assert len(paths) == 4 and len(set(paths)) == 4  # a name per delivery, never reused
    for path, out in zip(paths, [view.output_a, view.output_b] * 2, strict=True):
        assert path.startswith(str(tmp_path / "clips")) and path.endswith(".wav")
        name = path.rsplit("/", 1)[1]
        assert "tts" not in name and len(name) >= 26  # random, nothing of the model
        with wave.open(io.BytesIO(clips.get(name))) as w:
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (24000, 1, 2)
            samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        np.testing.assert_array_equal(samples, out.samples)
    assert first[2:] == [None] * 4  # text and image players get nothing in a speech arena
    assert not any(tmp_path.iterdir())  # nothing on disk


def test_text_outputs_go_to_the_text_boxes_and_write_no_file(tmp_path):
    clips = ClipStore(tmp_path / "clips", 2**20)
    media = battle_media.values(_view("text"), clips, str(tmp_path))
    assert media == [None, None, "first", "second", None, None]
    assert battle_media.serialized(media) == media  # text is sent as it is
    assert not any(tmp_path.iterdir()) and len(clips) == 0


def test_images_are_files_in_gradios_cache_sent_as_file_data(tmp_path):
    view = _view("image")
    media = battle_media.values(view, ClipStore(tmp_path / "clips", 2**20), str(tmp_path))
    assert media[:4] == [None] * 4
    for path, out in zip(media[4:], (view.output_a, view.output_b), strict=True):
        assert path.startswith(str(tmp_path)) and Path(path).read_bytes() == out.image_bytes
    sent = battle_media.serialized(media)
    assert sent[:4] == [None] * 4
    assert [s["path"] for s in sent[4:]] == media[4:]
    assert all(s["meta"] == {"_type": "gradio.FileData"} for s in sent[4:])


def test_clips_are_sent_as_file_data_of_their_store_path(tmp_path):
    media = battle_media.values(_view(), ClipStore(tmp_path / "clips", 2**20), str(tmp_path))
    sent = battle_media.serialized(media)
    assert [s["path"] for s in sent[:2]] == media[:2] and sent[2:] == [None] * 4
    assert all(s["meta"] == {"_type": "gradio.FileData"} and s.get("orig_name") is None
               for s in sent[:2])  # fmt: skip


def test_a_missing_matplotlib_fails_its_import_at_once(monkeypatch):
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    webstack.forget_missing_matplotlib()
    assert sys.modules["matplotlib"] is None
    with pytest.raises(ImportError):
        import matplotlib  # noqa: F401


def test_an_installed_matplotlib_is_left_alone(monkeypatch):
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    spec = importlib.machinery.ModuleSpec("matplotlib", None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    webstack.forget_missing_matplotlib()
    assert "matplotlib" not in sys.modules


def test_the_player_serves_our_wav_without_probing_it(tmp_path, monkeypatch):
    from gradio import processing_utils

    from arena_core.page.clip import clip_player

    def no_probe(*args, **kwargs):
        raise AssertionError("ffmpeg/ffprobe consulted for a WAV file the app wrote")

    monkeypatch.setattr(processing_utils, "ffmpeg_installed", no_probe)
    monkeypatch.setattr(processing_utils, "audio_is_playable", no_probe)
    player = clip_player(interactive=False)
    path = battle_media.values(_view(), ClipStore(tmp_path / "clips", 2**20), str(tmp_path))[0]
    served = player.postprocess(path)
    assert served.path == path and served.orig_name is None
    assert player.get_block_name() == "audio"  # the browser's own audio player
    samples = (np.arange(2400) % 100 * 50).astype(np.int16)
    assert player.postprocess((24000, samples)).path.endswith(".wav")  # other values: gr.Audio's
