"""The battle's audio player: a ``gr.Audio`` that hands the browser the app's own clips as they are.

``app._media`` puts each delivered clip (a fresh random name, 16-bit PCM WAV, which every
browser plays) in the clip store (``arena_core.space.clips``) and gives the player its path,
which the store's route serves. Handed a file path, ``gr.Audio`` would check that the file is
playable with ``ffprobe`` whenever ffmpeg is installed, as it is on Hugging Face Spaces: one
subprocess per clip, on the path of every battle (and the file is not on disk). This player
skips that check for our own WAV clips and leaves every other value to ``gr.Audio``.

A function that adapts one player rather than a subclass: Gradio writes a ``.pyi`` stub next to
the module of every component class it sees defined, which a package should not do at import.
"""

from __future__ import annotations

import gradio as gr
from gradio.data_classes import FileData


def clip_player(**kwargs) -> gr.Audio:
    """A ``gr.Audio(**kwargs)`` whose output values may be paths of the clip store's WAV clips."""
    player = gr.Audio(**kwargs)
    general = player.postprocess

    def postprocess(value):
        # No orig_name: the browser needs none, and a name is one more thing it could compare.
        if isinstance(value, str) and value.endswith(".wav"):
            return FileData(path=value)
        return general(value)

    player.postprocess = postprocess
    return player
