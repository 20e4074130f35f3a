"""What a backend returns: one :class:`Output` per generation, of the arena's modality.

* audio: ``sample_rate`` (Hz) and ``samples``, a read-only mono ``int16`` array;
* text: ``text``;
* image: ``image_bytes`` (the encoded file as the service sent it) and
  ``image_format`` (``png``, ``jpeg``, ``webp`` or ``gif``, sniffed from the bytes).

Images are kept as bytes rather than a path so an output is self-contained: it
can be cached, compared and handed to several visitors without anyone owning a
temporary file. :meth:`Output.save` writes any output to a file whose name is
random, never derived from the model, so the file a browser downloads cannot
reveal which model made it before the vote.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arena_core.backends import audio

#: Leading bytes of each image format we accept, for sniffing.
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
)
#: File suffix per image format.
IMAGE_SUFFIXES = {"png": ".png", "jpeg": ".jpg", "webp": ".webp", "gif": ".gif"}
#: File suffix per modality for the formats that have only one.
_SUFFIXES = {"audio": ".wav", "text": ".txt"}
#: Random bytes in a saved file's name (hex-encoded, so twice as many characters).
_NAME_BYTES = 16
#: Sample rates an audio output may have (Hz): telephone-band speech up to studio audio.
MIN_SAMPLE_RATE, MAX_SAMPLE_RATE = 4_000, 192_000
#: Longest audio output accepted (seconds): far beyond any prompt's speech, short of
#: the hours of audio a broken service could send to fill memory and disk.
MAX_AUDIO_SECONDS = 600.0
#: Largest absolute int16 sample of a clip that counts as silent (about -66 dBFS).
SILENT_PEAK = 16


#: Longest plausible speech for a prompt: this many seconds plus :data:`SECONDS_PER_CHAR`
#: per character (people speak about 14 characters a second; four times slower is
#: still accepted). Longer audio is a broken engine, not an answer.
PLAUSIBLE_SECONDS, SECONDS_PER_CHAR = 10.0, 0.3


class OutputError(ValueError):
    """Data that cannot be an output of the claimed modality."""


def sniff_image_format(data: bytes) -> str | None:
    """``png``/``jpeg``/``gif``/``webp`` from an image's leading bytes, else None."""
    for magic, name in _IMAGE_MAGIC:
        if data.startswith(magic):
            return name
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


@dataclass(frozen=True, eq=False)
class Output:
    """One generated output. Build it with :meth:`from_audio`, :meth:`from_text` or :meth:`from_image`.

    Equality is identity (``eq=False``): numpy arrays have no single truth value,
    and two generations are different events even when their content matches.
    """

    modality: str
    sample_rate: int | None = None
    samples: np.ndarray | None = None
    text: str | None = None
    image_bytes: bytes | None = None
    image_format: str | None = None

    @classmethod
    def from_audio(cls, sample_rate: int, samples: np.ndarray) -> Output:
        """Audio output; samples are converted to read-only mono int16 (floats taken as [-1, 1]).

        Refused with :class:`OutputError`, whatever the engine claims: a rate outside
        :data:`MIN_SAMPLE_RATE`..:data:`MAX_SAMPLE_RATE`, NaN or infinite samples,
        no samples, more than :data:`MAX_AUDIO_SECONDS`, or silence. A visitor must
        never be asked to judge a clip that is not speech.
        """
        if not MIN_SAMPLE_RATE <= int(sample_rate) <= MAX_SAMPLE_RATE:
            raise OutputError(
                f"sample rate {sample_rate} Hz is outside {MIN_SAMPLE_RATE}-{MAX_SAMPLE_RATE} Hz"
            )
        array = np.asarray(samples)
        if len(array) > MAX_AUDIO_SECONDS * int(sample_rate):
            raise OutputError(f"{len(array) / int(sample_rate):.0f} s of audio is too long")
        if np.issubdtype(array.dtype, np.inexact) and not np.isfinite(array).all():
            raise OutputError("audio holds NaN or infinite samples")
        mono = audio.as_mono_int16(array)
        if len(mono) == 0:
            raise OutputError("audio output has no samples")
        if int(np.abs(mono.astype(np.int32)).max()) <= SILENT_PEAK:
            raise OutputError("audio output is silent")
        return cls(modality="audio", sample_rate=int(sample_rate), samples=mono)

    @classmethod
    def from_wav(cls, data: bytes, *, whole: bool = False) -> Output:
        """Audio output from the bytes of a PCM WAV file (``whole``: see :func:`audio.decode_wav`)."""
        try:
            rate, samples = audio.decode_wav(data, whole=whole)
        except audio.AudioFormatError as exc:
            raise OutputError(str(exc)) from None
        return cls.from_audio(rate, samples)

    @classmethod
    def from_text(cls, text: str) -> Output:
        if not isinstance(text, str) or not text.strip():
            raise OutputError("text output is empty")
        return cls(modality="text", text=text)

    @classmethod
    def from_image(cls, data: bytes) -> Output:
        """Image output from an encoded image file's bytes (format sniffed, not trusted)."""
        image_format = sniff_image_format(data)
        if image_format is None:
            raise OutputError(f"not a PNG, JPEG, WebP or GIF image (starts {data[:8]!r})")
        return cls(modality="image", image_bytes=bytes(data), image_format=image_format)

    def __repr__(self) -> str:
        if self.modality == "audio":
            return f"<Output audio {self.sample_rate} Hz, {self.duration:.2f} s>"
        if self.modality == "text":
            return f"<Output text, {len(self.text)} characters>"
        return f"<Output image {self.image_format}, {len(self.image_bytes)} bytes>"

    @property
    def duration(self) -> float:
        """Length of an audio output in seconds (0 for other modalities)."""
        if self.modality != "audio":
            return 0.0
        return len(self.samples) / self.sample_rate

    @property
    def suffix(self) -> str:
        """File suffix of :meth:`to_bytes` (``.wav``, ``.txt``, ``.png`` ...)."""
        if self.modality == "image":
            return IMAGE_SUFFIXES[self.image_format]
        return _SUFFIXES[self.modality]

    def to_bytes(self) -> bytes:
        """The output as file content: WAV, UTF-8 text or the image as received (lossless)."""
        if self.modality == "audio":
            return audio.encode_wav(self.sample_rate, self.samples)
        if self.modality == "text":
            return self.text.encode("utf-8")
        return self.image_bytes

    def write_wav(self, path: str | Path) -> Path:
        """Write an audio output to ``path`` as a 16-bit mono WAV file (for ``gr.Audio``)."""
        if self.modality != "audio":
            raise OutputError(f"a {self.modality} output has no audio to write")
        path = Path(path)
        path.write_bytes(self.to_bytes())
        return path

    def save(self, directory: str | Path) -> Path:
        """Write the output into ``directory`` under a random name and return the path.

        The name is random on purpose: it must not reveal the model to the
        visitor's browser (see the module docstring).
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{secrets.token_hex(_NAME_BYTES)}{self.suffix}"
        path.write_bytes(self.to_bytes())
        return path

    @classmethod
    def from_bytes(cls, modality: str, data: bytes) -> Output:
        """Inverse of :meth:`to_bytes` (used by the cache).

        A WAV must hold every frame its header declares: :meth:`to_bytes` writes exact
        headers, so a shorter file was cut short after it was written.
        """
        if modality == "audio":
            return cls.from_wav(data, whole=True)
        if modality == "text":
            return cls.from_text(data.decode("utf-8"))
        if modality == "image":
            return cls.from_image(data)
        raise OutputError(f"unknown modality {modality!r}")


def implausible(output: Output, text: str) -> str | None:
    """Why ``output`` cannot be the speech of ``text`` (far too long), or None if it can.

    Checked on fresh outputs and on cache hits alike: the cache folder outlives the
    code that filled it, so a hit gets the same bar as a generation.
    """
    if output.duration > PLAUSIBLE_SECONDS + SECONDS_PER_CHAR * len(text):
        return f"{output.duration:.0f} s of audio for {len(text)} characters of text"
    return None
