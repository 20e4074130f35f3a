"""The battle's audio player: a ``gr.Audio`` that serves the WAV files the app wrote as they are.

``app._media`` writes each delivered clip into Gradio's cache itself (a fresh random name, 16-bit
PCM WAV, which every browser plays). Handed a file path, ``gr.Audio`` would check that the file
is playable with ``ffprobe`` whenever ffmpeg is installed, as it is on Hugging Face Spaces: one
subprocess per clip, on the path of every battle. This player skips that check for our own WAV
files and leaves every other value to ``gr.Audio``.
"""

from __future__ import annotations

import gradio as gr
from gradio.data_classes import FileData

from gradio.events import Dependency

class Clip(gr.Audio):
    """``gr.Audio`` in the browser (``is_template``: same front-end component and API type)."""

    is_template = True

    def postprocess(self, value):
        # No orig_name: the browser needs none, and a name is one more thing it could compare.
        if isinstance(value, str) and value.endswith(".wav"):
            return FileData(path=value)
        return super().postprocess(value)
    from typing import Callable, Literal, Sequence, Any, TYPE_CHECKING
    from gradio.blocks import Block
    if TYPE_CHECKING:
        from gradio.components import Timer
        from gradio.components.base import Component