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

#: The kinds of the component pairs on the battle screen, in the order of their values.
KINDS = ("audio", "text", "image")
#: The kinds whose values are files (a path here, Gradio's file data on the wire).
FILE_KINDS = frozenset({"audio", "image"})


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
    slots = []
    for kind in KINDS:
        for out in (view.output_a, view.output_b):
            if kind != view.modality:
                slots.append(None)
            elif kind == "audio":
                slots.append(clips.put(out.to_bytes()))
            elif kind == "text":
                slots.append(out.text)
            else:
                slots.append(str(out.save(cache)))
    return slots


def serialized(media: list) -> list:
    """:func:`values`'s values as the components' post-processing would send them: a file's
    path as Gradio's file data (Gradio gives it its URL), text as it is."""
    kinds = [kind for kind in KINDS for _side in "AB"]
    return [FileData(path=v).model_dump() if kind in FILE_KINDS and v is not None else v
            for kind, v in zip(kinds, media, strict=True)]  # fmt: skip
