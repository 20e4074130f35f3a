"""Found by the engines hunt: typed prompts that steer an engine, a hosted Space's odd
answer, damaged cache entries, and long Japanese prompts.

Each test's docstring says what a visitor or an operator saw before the fix.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest

from arena_core.backends import BackendError, OutputCache, make_backend
from arena_core.backends.audio import encode_wav
from arena_core.backends.output import Output
from arena_core.registry import BackendSpec, Model
from arena_core.space.blinding import Blinder, BlindingParams


def model(backend_type: str, model_id: str = "test/model", **options) -> Model:
    return Model(
        id=model_id, name=model_id, backend=BackendSpec(backend_type, MappingProxyType(options))
    )


def backend_or_skip(backend_type: str, **options):
    backend = make_backend(model(backend_type, **options), "audio")
    availability = backend.availability()
    if not availability.ok:
        pytest.skip(f"{backend_type}: {availability.reason}")
    return backend


def tone_wav(path, seconds: float, rate: int = 16_000) -> None:
    t = np.arange(int(seconds * rate)) / rate
    path.write_bytes(encode_wav(rate, (np.sin(2 * np.pi * 1000 * t) * 20_000).astype(np.int16)))


def test_a_typed_pico_play_tag_does_not_read_a_file_of_the_server(tmp_path):
    """SVOX Pico obeys markup in its text: a visitor who typed
    ``<play file="/any/file.wav"/> hello`` heard that server file inside Pico's clip (any
    WAV the app could read, by absolute or relative path, tags in any case)."""
    pico = backend_or_skip("pico", voice="en-US")
    secret = tmp_path / "secret.wav"
    tone_wav(secret, 60.0)
    for prompt in (f'<play file="{secret}"/> hello', f"< PLAY FILE='{secret}'/> hello"):
        output = pico.generate(prompt, 60)
        assert output.duration < 30.0, f"{prompt!r} played the server's file"


def test_a_typed_pico_genfile_tag_does_not_write_a_file_on_the_server(tmp_path):
    """``<genfile file="/path/x.wav"> hello </genfile>`` typed as a prompt made SVOX Pico
    create (or overwrite) that WAV file anywhere the app may write: a visitor could fill
    the disk or replace files of the app's data folder."""
    pico = backend_or_skip("pico", voice="en-US")
    target = tmp_path / "written.wav"
    for tag in ("genfile", "GenFile"):
        pico.generate(f'<{tag} file="{target}"> hello world </{tag}>', 60)
        assert not target.exists(), f"<{tag}> wrote a file"


@pytest.fixture(scope="module")
def path_answering_space():
    """A local Gradio app whose endpoint answers a path on this machine as text, as a
    Space whose API changed (or a hostile one) could."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    gr = pytest.importorskip("gradio")
    from conftest import launch_on_free_port

    with gr.Blocks() as demo:
        text, answer = gr.Textbox(), gr.Textbox()
        gr.Button().click(lambda t: t, text, answer, api_name="as_text")
    yield launch_on_free_port(demo)
    demo.close()
    monkeypatch.undo()


@pytest.mark.filterwarnings("ignore:.*(no_silent_downcasting|copy keyword)")
def test_a_space_answering_a_local_path_neither_reads_nor_deletes_that_file(
    path_answering_space, tmp_path
):
    """A speech Space whose endpoint answered a string (a Textbox output, which
    ``gradio_client`` hands over as it is) naming a file of the arena's own machine had that
    file read as the model's clip and then deleted (with its folder when that left it
    empty): a Space could play the server's WAV files to visitors and delete the vote log."""
    victim = tmp_path / "votes" / "shard.wav"
    victim.parent.mkdir()
    tone_wav(victim, 1.0)
    block = {"space": path_answering_space, "api_name": "/as_text", "args": [str(victim)]}
    backend = make_backend(model("gradio-space", **block), "audio", env={"HF_TOKEN": "hf_x"})
    with pytest.raises(BackendError, match="unusable answer"):
        backend.generate("Hello", 20.0)
    assert victim.exists(), "the app deleted a file a Space named"


def speech(rate: int, seconds: float, seed: int):
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    body = rng.normal(0, 0.2, len(t)) * (0.55 + 0.45 * np.sin(2 * np.pi * 4 * t))
    return Output.from_audio(rate, np.round(np.clip(body, -1, 1) * 32767).astype(np.int16))


def test_a_shaped_clip_whose_rate_was_damaged_is_shaped_again(tmp_path):
    """The shaped-clip cache is kept in the data folder across restarts. One entry whose
    header's rate was damaged (one bit: 24,000 Hz read as 23,744) is still a whole WAV, so
    it was served: every battle that drew the model on that prompt failed with "clips must
    be shaped at 24000 Hz first" instead of showing two clips or drawing again."""
    first, second = speech(16_000, 1.0, 1), speech(22_050, 1.5, 2)
    Blinder(BlindingParams(), cache=OutputCache(tmp_path)).prepare(first, "source")
    (path,) = tmp_path.glob("*.wav")
    data = bytearray(path.read_bytes())
    assert int.from_bytes(data[24:28], "little") == 24_000
    data[25] ^= 0x01  # one bit of the rate field: 24,000 -> 23,744 Hz
    path.write_bytes(bytes(data))
    restarted = Blinder(BlindingParams(), cache=OutputCache(tmp_path))
    assert restarted.shaped("source") is None  # a miss: the battle generates it again
    clips = restarted.deliver([restarted.prepare(first, "source"), restarted.prepare(second)])
    assert {clip.sample_rate for clip in clips} == {24_000}
    assert restarted.shaped("source").sample_rate == 24_000  # and the entry is whole again


def test_a_cached_wav_whose_chunk_header_is_damaged_is_dropped_not_raised(tmp_path):
    """A cache entry whose data chunk header was damaged (its id and size bytes) made
    Python's ``wave`` raise a bare RuntimeError, which the cache did not take for damage: it
    came out of every battle that drew the model on that prompt (a server error, not a
    redraw), the entry was never dropped, and the warm-up, which reads RuntimeError as the
    app shutting down, stopped there and left the arena cold."""
    clip = Output.from_audio(8000, (np.sin(np.arange(4000) / 3) * 20000).astype(np.int16))
    cache = OutputCache(tmp_path)
    key = cache.key("m", "Hello", "v")
    path = cache.put(key, clip)
    data = bytearray(path.read_bytes())
    assert data[36:40] == b"data"
    data[36], data[43] = ord("x"), 0x10  # an unknown chunk, longer than the file
    path.write_bytes(bytes(data))
    restarted = OutputCache(tmp_path)  # nothing in memory: the file is all there is
    assert restarted.get(key, "audio") is None
    assert restarted.dropped == 1 and not path.exists()


@pytest.mark.parametrize("spaced", [True, False])
def test_kokoro_reads_a_long_prompt_without_sentence_punctuation_to_its_end(spaced):
    """A Japanese prompt of ~300 characters with no 、。 (words parted by spaces, or none:
    779 phonemes) was cut to its first 500 phonemes: Kokoro's clip stopped two thirds of
    the way through, mid-word, and visitors voted on a voice that did not finish."""
    from arena_core.backends.kokoro import MAX_PHONEMES, phoneme_chunks

    words = ["kʲoː", "βa", "teŋkʲi", "ɡa", "ii", "node", "koːeɴ", "e", "sampo", "ɲi"]
    phonemes = (" " if spaced else "").join(words * 25)
    assert len(phonemes) > MAX_PHONEMES
    chunks = phoneme_chunks(phonemes)
    assert all(0 < len(chunk) <= MAX_PHONEMES for chunk in chunks)
    assert "".join("".join(chunks).split()) == "".join(phonemes.split())  # nothing dropped
    if spaced:  # cut between words, never inside one
        assert " ".join(chunks).split() == phonemes.split()
