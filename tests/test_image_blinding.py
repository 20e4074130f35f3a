"""Blind delivery of images (arena_core/space/image_blinding.py): before, an image arena
served each image as its provider sent it, so its format, metadata, colour mode, pixel
size and, for a cached image, its very bytes could name the model before the vote. No
image model runs here (no network): painters in the providers' own habits stand in."""

import io
import struct
from copy import deepcopy
from types import MappingProxyType

import numpy as np
import pytest
from fakes import REGISTRY, FakeBackend
from PIL import Image, PngImagePlugin

from arena_core.backends import BackendError, ModelPool, Output
from arena_core.registry import parse_registry
from arena_core.space import image_blinding
from arena_core.space.blinding import Blinder, BlindingError, BlindingParams
from arena_core.space.image_blinding import SIDE, checked, deliver_images, picture
from arena_core.space.service import ArenaService
from arena_core.votes.log import VoteLog

#: A signature a generator leaves in its files (as many do), to be looked for in the bytes.
SIGNED = b"made-by-sdxl-pipeline"


def encoded(image: Image.Image, fmt: str, **options) -> Output:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return Output.from_image(buffer.getvalue())


def gradient(size, mode="RGB") -> Image.Image:
    """A picture with some content (a plain square would compress to nothing)."""
    w, h = size
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) % 256], -1)
    return Image.fromarray(rgb.astype(np.uint8), "RGB").convert(mode)


def jpeg_with_exif(size=(1024, 1024), orientation=1) -> Output:
    exif = Image.Exif()
    exif[0x0131] = "FLUX.1 pipeline"  # Software
    exif[0x0112] = orientation
    return encoded(gradient(size), "JPEG", exif=exif, quality=90)


def png_with_text(size=(512, 512)) -> Output:
    info = PngImagePlugin.PngInfo()
    info.add_text("parameters", f"Steps: 30, Model: {SIGNED.decode()}")
    return encoded(gradient(size, "RGBA"), "PNG", pnginfo=info)


def chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """A PNG's chunks as (type, data)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    out, at = [], 8
    while at < len(png):
        length = int.from_bytes(png[at : at + 4], "big")
        out.append((png[at + 4 : at + 8], png[at + 8 : at + 8 + length]))
        at += 12 + length
    return out


def test_two_providers_images_leave_as_one_form_with_nothing_of_their_files():
    a, b = deliver_images([jpeg_with_exif(), png_with_text()], np.random.default_rng(1))
    for out in (a, b):
        data = out.to_bytes()
        assert out.image_format == "png" and out.suffix == ".png"
        assert SIGNED not in data and b"FLUX" not in data and b"Exif" not in data
        assert {kind for kind, _ in chunks(data)} == {b"IHDR", b"IDAT", b"IEND"}
        with Image.open(io.BytesIO(data)) as image:
            assert (image.format, image.mode, image.size) == ("PNG", "RGB", (SIDE, SIDE))
            assert not image.info.get("exif") and "parameters" not in image.info
    # One header: the same size, depth and colour type tell nothing apart.
    assert chunks(a.to_bytes())[0] == chunks(b.to_bytes())[0]


def test_the_same_image_twice_never_gives_the_same_bytes_and_looks_the_same():
    source = png_with_text((SIDE, SIDE))
    rng = np.random.default_rng(2)
    first, second = deliver_images([source, source], rng)
    again, _ = deliver_images([source, source], rng)
    assert len({first.to_bytes(), second.to_bytes(), again.to_bytes()}) == 3
    pixels = [np.asarray(Image.open(io.BytesIO(o.to_bytes())), dtype=np.int16)
              for o in (first, again)]  # fmt: skip
    truth = np.asarray(picture(source), dtype=np.int16)
    for seen in pixels:
        moved = np.abs(seen - truth)
        assert moved.max() == 1  # one step at most, invisible
        assert 0.005 < (moved > 0).mean() < 0.011  # about TOUCHED_SHARE of the values


def test_an_image_turned_by_its_exif_is_delivered_as_a_browser_shows_it():
    # Orientation 6: stored 400 x 300, shown turned a quarter, 300 x 400.
    out, _ = deliver_images([jpeg_with_exif((400, 300), orientation=6)] * 2,
                            np.random.default_rng(3))  # fmt: skip
    with Image.open(io.BytesIO(out.to_bytes())) as image:
        assert image.size == (768, SIDE)


def test_images_of_two_shapes_share_one_canvas_and_transparency_turns_white():
    wide = encoded(gradient((800, 400)), "WEBP", lossless=True)
    clear = Image.new("RGBA", (300, 300), (0, 0, 0, 0))  # fully transparent
    a, b = deliver_images([wide, encoded(clear, "PNG")], np.random.default_rng(4))
    sizes = set()
    for out in (a, b):
        with Image.open(io.BytesIO(out.to_bytes())) as image:
            sizes.add(image.size)
    assert sizes == {(SIDE, SIDE)}
    with Image.open(io.BytesIO(b.to_bytes())) as image:
        assert np.asarray(image, dtype=np.int16).min() >= 254  # white, one step of noise at most
    with Image.open(io.BytesIO(a.to_bytes())) as image:  # the wide one, centred on white
        top = np.asarray(image)[:200]
        assert top.min() >= 254


@pytest.mark.parametrize("mode", ["P", "L", "I;16", "LA", "CMYK"])
def test_every_colour_mode_becomes_8_bit_rgb(mode):
    source = gradient((64, 64)).convert(mode) if mode != "I;16" else Image.fromarray(
        np.arange(64 * 64, dtype=np.uint16).reshape(64, 64) * 16)  # fmt: skip
    fmt = "JPEG" if mode == "CMYK" else "PNG"
    out, _ = deliver_images([encoded(source, fmt)] * 2, np.random.default_rng(5))
    with Image.open(io.BytesIO(out.to_bytes())) as image:
        assert (image.mode, image.size) == ("RGB", (SIDE, SIDE))


def test_an_unreadable_or_huge_image_fails_its_side_not_the_server(monkeypatch):
    broken = Output(modality="image", image_bytes=b"\x89PNG\r\n\x1a\n" + b"\0" * 40,
                    image_format="png")  # fmt: skip
    with pytest.raises(BlindingError, match="unreadable"):
        picture(broken)
    monkeypatch.setattr(image_blinding, "MAX_PIXELS", 100)
    huge = encoded(gradient((20, 20)), "PNG")
    with pytest.raises(BlindingError, match="too large"):
        picture(huge)
    failed = checked("m1", huge)
    assert isinstance(failed, BackendError) and "delivered blind" in str(failed)
    assert checked("m1", failed) is failed


def icc_profile(red, green, blue, gamma=2.2) -> bytes:
    """A minimal ICC v2 RGB display profile (matrix and gamma curves) with these primaries
    (XYZ, D50): enough for the colour engine, made here since this machine holds no .icc file."""

    def s15(x):
        return struct.pack(">i", round(x * 65536))

    def xyz(x, y, z):
        return b"XYZ " + b"\0" * 4 + s15(x) + s15(y) + s15(z)

    curve = b"curv" + b"\0" * 4 + struct.pack(">IH", 1, round(gamma * 256)) + b"\0\0"
    text = b"test\0"
    desc = b"desc" + b"\0" * 4 + struct.pack(">I", len(text)) + text + b"\0" * 78
    tags = [(b"desc", desc), (b"wtpt", xyz(0.9642, 1.0, 0.8249)), (b"rXYZ", xyz(*red)),
            (b"gXYZ", xyz(*green)), (b"bXYZ", xyz(*blue)), (b"rTRC", curve),
            (b"gTRC", curve), (b"bTRC", curve)]  # fmt: skip
    offset, table, data = 128 + 4 + 12 * len(tags), b"", b""
    for sig, body in tags:
        table += sig + struct.pack(">II", offset + len(data), len(body))
        data += body + b"\0" * (-len(body) % 4)
    header = (struct.pack(">I", offset + len(data)) + b"\0" * 4 + bytes([2, 0x10, 0, 0])
              + b"mntrRGB XYZ " + b"\0" * 12 + b"acsp" + b"\0" * 28
              + s15(0.9642) + s15(1.0) + s15(0.8249) + b"\0" * 48)  # fmt: skip
    return header + struct.pack(">I", len(tags)) + table + data


#: sRGB's primaries (D50), and a profile that swaps red and green: a colour engine that
#: reads it turns stored red into sRGB green, which shows that the profile was applied.
SRGB_PRIMARIES = (0.4361, 0.2225, 0.0139), (0.3851, 0.7169, 0.0971), (0.1431, 0.0606, 0.7141)


def test_an_images_colour_profile_is_applied_not_dropped():
    """A wide-gamut image (Display P3, Adobe RGB) whose profile was dropped looked duller than
    its provider meant, which could tell its model apart (found by the day's review)."""
    red, green, blue = SRGB_PRIMARIES
    swapped = encoded(Image.new("RGB", (64, 64), (255, 0, 0)), "PNG",
                      icc_profile=icc_profile(green, red, blue))  # fmt: skip
    plain = encoded(Image.new("RGB", (64, 64), (255, 0, 0)), "PNG")
    a, b = deliver_images([swapped, plain], np.random.default_rng(7))
    shown = [np.asarray(Image.open(io.BytesIO(o.to_bytes())), dtype=np.int16)[32, 32]
             for o in (a, b)]  # fmt: skip
    assert np.abs(shown[0] - [0, 255, 0]).max() <= 2  # as the profile says: green
    assert np.abs(shown[1] - [255, 0, 0]).max() <= 1  # no profile: sRGB, as it is
    with Image.open(io.BytesIO(a.to_bytes())) as image:
        assert "icc_profile" not in image.info  # delivered in sRGB, with no profile of its own


class HabitPainter(FakeBackend):
    """Paints as its provider would send: m0 a signed PNG, m1 a JPEG with EXIF, m2 a
    small WebP, m3 an image no decoder reads."""

    modalities = frozenset({"image"})
    options_spec = MappingProxyType({})

    def _generate(self, text, timeout, language):
        model = self.model.id
        if model == "m0":
            return png_with_text()
        if model == "m1":
            return jpeg_with_exif()
        if model == "m2":
            return encoded(gradient((256, 256)), "WEBP")
        return Output(modality="image", image_bytes=b"GIF89a" + b"\0" * 20, image_format="gif")


def test_an_image_battle_through_the_service_is_delivered_blind(tmp_path, caplog):
    raw = deepcopy(REGISTRY)
    painting = raw["arenas"][0]
    painting.update(modality="image")
    for model in painting["models"]:
        model["backend"] = {"type": "fake"}
    registry = parse_registry(raw)
    arena = registry.arenas[0]
    pool = ModelPool(arena, {m.id: HabitPainter(m) for m in arena.models})
    service = ArenaService(registry, {arena.id: pool}, VoteLog(tmp_path / "votes"),
                           blinder=Blinder(BlindingParams()), rng=np.random.default_rng(0))  # fmt: skip
    service.load()
    caplog.set_level("WARNING", logger="arena_core.space.service")
    seen = set()
    for _ in range(12):
        view = service.new_battle(arena.id)
        heads = {chunks(o.to_bytes())[0] for o in (view.output_a, view.output_b)}
        assert len(heads) == 1 and {o.image_format for o in (view.output_a, view.output_b)} == {
            "png"
        }
        assert all(SIGNED not in o.to_bytes() for o in (view.output_a, view.output_b))
        reveal = service.vote(view.handle, "tie", voter=f"v{len(seen)}")
        seen |= {reveal.a.model_id, reveal.b.model_id}
    assert "m3" not in seen  # its side failed, and the battle drew another pair
    assert "m3 failed (m3: output cannot be delivered blind: unreadable image" in caplog.text


@pytest.mark.parametrize("mode", ["P", "1", "I;16", "LA"])
def test_a_large_image_of_any_mode_is_reduced_after_its_conversion(mode):
    """Pillow's reduce refuses palette, 1-bit and 16-bit images (and averages a palette's
    indices): a GIF or palette PNG of 4,096 pixels or more failed the battle with a
    ValueError, a server error, not a side that failed (found by the day's last review)."""
    if mode == "I;16":
        source = Image.fromarray(np.full((300, 4200), 30000, dtype=np.uint16))
    else:
        source = gradient((4200, 300)).convert(mode)
    pic = picture(encoded(source, "PNG"))
    assert (pic.mode, pic.size) == ("RGB", (SIDE, 73))
