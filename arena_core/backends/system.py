"""Speech engines installed as programs (Debian packages): CMU Flite and Festival's ``text2wave``.

Registry blocks::

    backend: {type: flite, voice: slt}                         # kal, kal16, awb, rms, slt
    backend: {type: festival, voice: cmu_us_slt_arctic_hts}    # or kal_diphone

Both engines take text from a file and write a WAV file, so one class runs
them: a subclass names the program, the Debian package that provides it, and
the argument list. Programs run with :func:`subprocess.run` on an argument list
(never a shell) with the generation's timeout; on timeout the child is killed.
The program is looked up on the ``PATH`` of the backend's environment mapping,
so a test can hide an installed engine. Text is written as Latin-1 (neither
engine reads UTF-8) after mapping typographic punctuation to ASCII.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar

from arena_core.backends.base import (
    Availability,
    Backend,
    BackendError,
    BackendTimeout,
    OptionSpec,
    one_line,
)
from arena_core.backends.output import Output, OutputError

logger = logging.getLogger(__name__)

#: Seconds allowed for ``--version`` / voice-listing probes.
_PROBE_TIMEOUT = 10.0
#: Typographic characters that Latin-1 engines would mispronounce, mapped to ASCII.
_ASCII_PUNCTUATION = str.maketrans(
    {"’": "'", "‘": "'", "“": '"', "”": '"', "–": "-", "—": "-", "…": "..."}
)
#: Festival voice names end up inside a Scheme expression: only plain identifiers are allowed.
_FESTIVAL_VOICE = re.compile(r"^[a-z0-9_]+$")
#: Where Debian installs Festival voices (``<dir>/<language>/<voice>``).
FESTIVAL_VOICE_DIRS = (Path("/usr/share/festival/voices"),)
#: Debian packages of the Festival voices we name in the default registry.
FESTIVAL_VOICE_PACKAGES = MappingProxyType(
    {"cmu_us_slt_arctic_hts": "festvox-us-slt-hts", "kal_diphone": "festvox-kallpc16k"}
)


class ProgramBackend(Backend):
    """A speech program that reads a text file and writes a WAV file; subclasses fill in the program."""

    modalities = frozenset({"audio"})
    options_spec: Mapping[str, OptionSpec] = MappingProxyType(
        {
            "voice": OptionSpec((str,), required=True, help="the engine's voice name"),
            "language": OptionSpec((str,), help="the language the voice speaks"),
        }
    )
    #: The executable, looked up on PATH.
    program: ClassVar[str]
    #: The Debian package that provides it (named in the unavailability reason).
    package: ClassVar[str]
    #: The command (looked up on PATH) and arguments that print the engine's version.
    version_command: ClassVar[tuple[str, ...]]

    def argv(self, executable: str, text_file: Path, wav_file: Path) -> list[str]:
        """The command line that speaks ``text_file`` into ``wav_file``."""
        raise NotImplementedError

    def voice_problem(self, executable: str) -> str | None:
        """Why the configured voice is not installed, or None if it is."""
        return None

    def _executable(self) -> str | None:
        return shutil.which(self.program, path=self.env.get("PATH"))

    def _check_availability(self) -> Availability:
        executable = self._executable()
        if executable is None:
            return Availability.no(f"{self.program} not on PATH (apt-get install {self.package})")
        problem = self.voice_problem(executable)
        return Availability.no(problem) if problem else Availability.yes()

    def _engine_version(self) -> str:
        executable = shutil.which(self.version_command[0], path=self.env.get("PATH"))
        if executable is None:
            return "not installed"
        result = _run([executable, *self.version_command[1:]], _PROBE_TIMEOUT)
        lines = [line.strip() for line in (result.stdout + result.stderr).splitlines()]
        numbered = [line for line in lines if any(c.isdigit() for c in line)]
        versioned = [line for line in numbered if "version" in line.lower()]
        return (versioned or numbered or ["unknown version"])[0]

    def _generate(self, text: str, timeout: float, language: str | None) -> Output:
        self.voice_for(language)  # refuses a language the voice does not speak
        executable = self._executable()
        if executable is None:
            raise BackendError(self.model_id, f"{self.program} not on PATH")
        with tempfile.TemporaryDirectory(prefix="arena-tts-") as tmp:
            text_file, wav_file = Path(tmp) / "prompt.txt", Path(tmp) / "speech.wav"
            text_file.write_bytes(
                text.translate(_ASCII_PUNCTUATION).encode("latin-1", errors="replace")
            )
            try:
                result = _run(self.argv(executable, text_file, wav_file), timeout)
            except subprocess.TimeoutExpired:
                raise BackendTimeout(
                    self.model_id, f"{self.program} took over {timeout:g} s"
                ) from None
            error = _failure(result, wav_file)
            if error:
                raise BackendError(self.model_id, f"{self.program}: {error}")
            try:
                return Output.from_wav(wav_file.read_bytes())
            except OutputError as exc:
                raise BackendError(
                    self.model_id, f"{self.program} wrote bad audio: {exc}"
                ) from None


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Run a program from an argument list (no shell); the child is killed on timeout."""
    return subprocess.run(  # noqa: S603 - argument list from our own code, executable from shutil.which
        argv,
        timeout=timeout,
        capture_output=True,
        text=True,
        errors="replace",
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _failure(result: subprocess.CompletedProcess, wav_file: Path) -> str | None:
    """What went wrong with a finished run (Festival reports Scheme errors with exit code 0)."""
    stderr = result.stderr.strip()
    if result.returncode != 0:
        return one_line(f"exit code {result.returncode}: {stderr[-300:]}")
    if "SIOD ERROR" in stderr or "SIOD ERROR" in result.stdout:
        return one_line(stderr or result.stdout)
    if not wav_file.is_file() or wav_file.stat().st_size == 0:
        return one_line(f"wrote no audio {stderr[-300:]}")
    return None


class FliteBackend(ProgramBackend):
    """CMU Flite (``type: flite``); voices built into Debian's flite: kal, kal16, awb, rms, slt."""

    type_name = "flite"
    program = "flite"
    package = "flite"
    version_command = ("flite", "--version")

    def argv(self, executable, text_file, wav_file):
        return [
            executable,
            "-voice",
            self.options["voice"],
            "-f",
            str(text_file),
            "-o",
            str(wav_file),
        ]

    def voice_problem(self, executable):
        result = _run([executable, "-lv"], _PROBE_TIMEOUT)
        voices = result.stdout.split(":", 1)[-1].split()
        voice = self.options["voice"]
        if voice in voices or Path(voice).suffix == ".flitevox":
            return None
        return f"flite has no voice {voice!r} (has {', '.join(voices)})"


class FestivalBackend(ProgramBackend):
    """Festival's ``text2wave`` (``type: festival``) with an installed Festival voice."""

    type_name = "festival"
    program = "text2wave"
    package = "festival"
    version_command = ("festival", "--version")

    @classmethod
    def _extra_problems(cls, options):
        voice = options.get("voice")
        if isinstance(voice, str) and not _FESTIVAL_VOICE.match(voice):
            return [f"festival voice must be a plain name like kal_diphone, got {voice!r}"]
        return []

    def argv(self, executable, text_file, wav_file):
        select_voice = f"(voice_{self.options['voice']})"
        return [executable, "-o", str(wav_file), "-eval", select_voice, str(text_file)]

    def voice_problem(self, executable):
        voice = self.options["voice"]
        if any(next(d.glob(f"*/{voice}"), None) for d in FESTIVAL_VOICE_DIRS if d.is_dir()):
            return None
        package = FESTIVAL_VOICE_PACKAGES.get(voice)
        hint = f" (apt-get install {package})" if package else ""
        return f"Festival voice {voice} not installed{hint}"
