"""Text and image battles through the launched app's API: /new_battle sends its values
without the components' post-processing (app._serialized), so each kind is checked as a
client receives it. No image or chat model runs offline here, so fakes stand in."""

import io
from copy import deepcopy
from types import MappingProxyType

import pytest
from conftest import serving
from fakes import REGISTRY, FakeBackend
from gradio_client import Client
from PIL import Image

from arena_core.backends import ModelPool, Output
from arena_core.registry import parse_registry
from arena_core.space.blinding import Blinder, BlindingParams
from arena_core.space.config import Settings
from arena_core.space.service import ArenaService
from arena_core.votes.log import VoteLog

COLOURS = {"m0": "red", "m1": "green", "m2": "blue", "m3": "white"}


class FakePainter(FakeBackend):
    """Paints an 8 x 8 square in the model's own colour."""

    modalities = frozenset({"image"})
    options_spec = MappingProxyType({})

    def _generate(self, text, timeout, language):
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), COLOURS[self.model.id]).save(buffer, format="PNG")
        return Output.from_image(buffer.getvalue())


def registry():
    raw = deepcopy(REGISTRY)
    painting = deepcopy(raw["arenas"][0])
    painting.update(id="paint", title="Paint", modality="image")
    for model in painting["models"]:
        model["backend"] = {"type": "fake"}
    raw["arenas"].append(painting)
    return parse_registry(raw)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("media")
    reg = registry()
    pools = {a.id: ModelPool(a, {m.id: (FakePainter if a.id == "paint" else FakeBackend)(m)
                                 for m in a.models})
             for a in reg.arenas}  # fmt: skip
    service = ArenaService(reg, pools, VoteLog(folder / "votes"), blinder=Blinder(BlindingParams()))
    service.load()
    settings = Settings(data_dir=folder, voter_salt="media", listen_share=0.0)
    with serving(service, settings) as (url, _):
        yield Client(url, analytics_enabled=False, verbose=False)


def test_an_image_battle_sends_two_images_and_takes_the_vote(app):
    prompt, *media = app.predict("paint", "", api_name="/new_battle")
    assert prompt in {"Hello there.", "Guten Tag."}
    assert media[:4] == [None] * 4
    colours, forms = [], set()
    for path in media[4:]:
        with Image.open(path) as image:
            colours.append(image.convert("RGB").getpixel((0, 0)))
            forms.add((image.format, image.mode, image.size))
    assert len(set(colours)) == 2  # two different models painted
    assert forms == {("PNG", "RGB", (1024, 1024))}  # delivered blind (test_image_blinding.py)
    _, reveal = app.predict("a", api_name="/vote")
    assert reveal["counted"] and {reveal["model_a"]["id"], reveal["model_b"]["id"]} <= set(COLOURS)


def test_a_text_battle_sends_the_two_texts_as_they_are(app):
    prompt, *media = app.predict("speech", "", api_name="/new_battle")
    assert media[:2] == [None, None] and media[4:] == [None, None]
    assert all(text.startswith(prompt) for text in media[2:4])
    _, reveal = app.predict("tie", api_name="/vote")
    assert reveal["vote"] == "tie" and reveal["counted"]
