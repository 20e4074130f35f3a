"""WAV and PCM helpers: every engine's audio ends up as mono 16-bit samples.

Engines hand back audio in several shapes (raw little-endian PCM from Pico and
eSpeak NG, WAV files from flite, Festival and hosted services, float arrays from
Piper). These pure functions turn each into one form, a read-only 1-D ``int16``
numpy array plus a sample rate, and back into WAV bytes with the standard
library's :mod:`wave`, so nothing beyond numpy is needed to play or cache them.
"""

from __future__ import annotations

import io
import wave

import numpy as np

#: Bytes per sample of the 16-bit PCM every output is stored as.
SAMPLE_WIDTH = 2
#: Largest magnitude of a 16-bit sample, for float <-> int conversion.
INT16_FULL_SCALE = 32767
#: The four bytes every RIFF/WAV file starts with.
WAV_MAGIC = b"RIFF"

#: Leading bytes of audio containers we can recognise but not decode without extra packages.
_OTHER_AUDIO_MAGIC = {b"fLaC": "FLAC", b"OggS": "Ogg", b"ID3": "MP3"}
#: An MPEG audio frame starts with 11 set bits (the frame sync).
_MPEG_SYNC = 0xFFE0
#: Names :func:`sniff_audio_format` gives to real audio containers.
KNOWN_AUDIO_FORMATS = frozenset({"WAV", *_OTHER_AUDIO_MAGIC.values()})


class AudioFormatError(ValueError):
    """Bytes that are not audio this module can decode (e.g. FLAC, MP3, HTML)."""


def pcm16_to_array(data: bytes) -> np.ndarray:
    """Raw little-endian 16-bit mono PCM to an int16 array (copies, so the result owns its data)."""
    if len(data) % SAMPLE_WIDTH:
        data = data[: len(data) - len(data) % SAMPLE_WIDTH]
    return np.frombuffer(data, dtype="<i2").astype(np.int16)


def float_to_int16(samples: np.ndarray) -> np.ndarray:
    """Float samples in [-1, 1] to int16, clipping anything outside."""
    clipped = np.clip(np.asarray(samples, dtype=np.float64), -1.0, 1.0)
    return np.round(clipped * INT16_FULL_SCALE).astype(np.int16)


def as_mono_int16(samples: np.ndarray) -> np.ndarray:
    """Any numeric array (1-D, or 2-D frames x channels) to a read-only mono int16 array.

    Floats are taken as [-1, 1]; wider integers are scaled down by their range.
    Channels are averaged, which is what a listener of a mono player would hear.
    """
    array = np.asarray(samples)
    if array.ndim == 2:
        array = array.mean(axis=1) if np.issubdtype(array.dtype, np.floating) else _int_mean(array)
    if array.ndim != 1:
        raise ValueError(f"audio must be 1-D or 2-D (frames x channels), got shape {array.shape}")
    if np.issubdtype(array.dtype, np.floating):
        array = float_to_int16(array)
    elif array.dtype != np.int16:
        array = _rescale_int(array)
    out = np.ascontiguousarray(array, dtype=np.int16).copy()
    out.flags.writeable = False
    return out


def _int_mean(array: np.ndarray) -> np.ndarray:
    return np.round(array.astype(np.float64).mean(axis=1)).astype(array.dtype)


def _rescale_int(array: np.ndarray) -> np.ndarray:
    info = np.iinfo(array.dtype)
    if info.bits <= 16 and info.min < 0:
        return array.astype(np.int16)
    centre = 0 if info.min < 0 else (info.max + 1) // 2  # unsigned 8-bit WAV is offset binary
    scaled = (array.astype(np.float64) - centre) / max(info.max - centre, 1)
    return float_to_int16(scaled)


def encode_wav(sample_rate: int, samples: np.ndarray) -> bytes:
    """Mono int16 samples to the bytes of a WAV file."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(SAMPLE_WIDTH)
        wav.setframerate(int(sample_rate))
        wav.writeframes(np.asarray(samples, dtype="<i2").tobytes())
    return buffer.getvalue()


def decode_wav(data: bytes, *, whole: bool = False) -> tuple[int, np.ndarray]:
    """The bytes of a PCM WAV file (8/16/24/32-bit, any channel count) to (rate, mono int16).

    Raises :class:`AudioFormatError` for anything else, naming the container when
    it is a known one (a hosted service that answers FLAC or MP3 says so).

    A partial last frame (a stream cut mid-sample) is dropped. ``whole`` also refuses a
    file holding fewer frames than its header declares: a file cut short (a crash before
    the disk had it all, a copy interrupted) would otherwise play as speech that stops
    mid-sentence. Files we wrote ourselves (the output cache) are read with it; engines'
    and services' answers are not, as a streamed WAV may declare a placeholder length.
    """
    if not data.startswith(WAV_MAGIC):
        raise AudioFormatError(f"not a WAV file ({sniff_audio_format(data)})")
    try:
        with wave.open(io.BytesIO(data), "rb") as wav:
            rate, width, channels = wav.getframerate(), wav.getsampwidth(), wav.getnchannels()
            declared = wav.getnframes()
            frames = wav.readframes(declared)
    # RuntimeError: ``wave`` raises a bare one for a chunk whose size runs past the file (a
    # damaged chunk header), which must read as damage like the others, not as a crash.
    except (wave.Error, EOFError, RuntimeError) as exc:
        raise AudioFormatError(f"unreadable WAV: {exc or type(exc).__name__}") from None
    present = len(frames) // (width * channels)
    if whole and present < declared:
        raise AudioFormatError(f"WAV cut short: {present} of the {declared} frames it declares")
    samples = _frames_to_array(frames[: present * width * channels], width)
    if channels > 1:
        samples = samples.reshape(-1, channels)
    return rate, as_mono_int16(samples)


def _frames_to_array(frames: bytes, width: int) -> np.ndarray:
    """Whole frames' bytes (a multiple of ``width``) to an array of their samples."""
    if width == 1:
        return np.frombuffer(frames, dtype=np.uint8)
    if width == 2:
        return np.frombuffer(frames, dtype="<i2")
    if width == 3:
        raw = np.frombuffer(frames, dtype=np.uint8).reshape(-1, 3)
        padded = np.zeros((len(raw), 4), dtype=np.uint8)
        padded[:, 1:] = raw  # little-endian 24-bit in the top three bytes of an int32
        return padded.view("<i4").reshape(-1)
    if width == 4:
        return np.frombuffer(frames, dtype="<i4")
    raise AudioFormatError(f"unsupported WAV sample width of {width} bytes")


def sniff_audio_format(data: bytes) -> str:
    """A short human name for what some bytes look like, for error messages."""
    if data.startswith(WAV_MAGIC):
        return "WAV"
    for magic, name in _OTHER_AUDIO_MAGIC.items():
        if data.startswith(magic):
            return name
    if len(data) >= 2 and int.from_bytes(data[:2], "big") & _MPEG_SYNC == _MPEG_SYNC:
        return "MP3"
    return f"unknown data starting {data[:8]!r}"


def rms(samples: np.ndarray) -> float:
    """Root mean square of int16 samples, in sample units (0 for silence or no samples)."""
    if len(samples) == 0:
        return 0.0
    return float(np.sqrt(np.mean(np.square(np.asarray(samples, dtype=np.float64)))))
