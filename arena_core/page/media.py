"""A battle's outputs as the page's players and the API get them.

The battle screen has an (audio, text, image) pair of components per side; an arena fills
the pair of its modality and leaves the others empty. The page's events hand these values
to the components; the API events (``/new_battle``) skip the components' processing and
send :func:`serialized` values instead (app.py says why).
"""

from __future__ import annotations

from gradio.data_classes import FileData

from arena_core.space.clips import ClipStore
from arena_core.space.views import BattleView


def values(view: BattleView, clips: ClipStore, cache: str) -> list:
    """Values for the (audio, text, image) pairs of components: this arena's kind, None elsewhere.

    A clip goes into the clip store as WAV bytes under a random name (``arena_core.space.clips``),
    which the player (``clip_player``) hands the browser as it is: handing Gradio the samples
    instead costs 3.5 ms a clip (a hash of the samples and an export through pydub), a file of
    our own in Gradio's cache 2.5 ms (written, path-checked twice, read back). The random name
    is one per delivery, like the dithered bytes, so a URL names no model
    (``arena_core.space.blinding``). An image is written into Gradio's cache folder, also
    under a random name.
    """
    values = []
    for kind in ("audio", "text", "image"):
        for out in (view.output_a, view.output_b):
            if kind != view.modality:
                values.append(None)
            elif kind == "audio":
                values.append(clips.put(out.to_bytes()))
            elif kind == "text":
                values.append(out.text)
            else:
                values.append(str(out.save(cache)))
    return values


#: The media slots (audio A, audio B, text A, text B, image A, image B) that hold files.
FILE_SLOTS = frozenset({0, 1, 4, 5})


def serialized(media: list) -> list:
    """:func:`values`'s values as the components' post-processing would send them: a file's
    path as Gradio's file data (Gradio gives it its URL), text as it is."""
    return [FileData(path=v).model_dump() if k in FILE_SLOTS and v is not None else v
            for k, v in enumerate(media)]  # fmt: skip
