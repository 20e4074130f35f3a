"""Blind delivery of a battle's images: nothing in the files tells the models apart but the pictures.

Before the vote a browser sees, for each image: its bytes, its format (a hosted model on a
Space answers with its own: PNG, JPEG or WebP), its metadata (EXIF tags, PNG text chunks
and XMP: an image from a ComfyUI or WebUI pipeline carries its whole workflow, checkpoint
name included, and many generators sign their images), its colour mode (RGBA, palette,
16-bit), its pixel size, its file name (random per delivery: ``Output.save``) and how long
the request took (``pacing``). Each of these can name a model, and an image served as
the provider sent it kept them all. Here the images of a battle are given one form:

1. **the picture only**: decoded, turned as its EXIF orientation says (as a browser shows
   it), laid on white where it is transparent, as 8-bit RGB; nothing else of the file is
   kept;
2. **one scale**: resized (Lanczos) so that its longer side is :data:`SIDE` pixels, as
   every clip is resampled to one rate;
3. **one canvas**: both centred on one white canvas, the larger width by the larger
   height (images of one aspect ratio, the usual case, fill it exactly), as clips are
   padded to one length;
4. **bytes of their own**: :data:`TOUCHED_SHARE` of the pixel values, drawn per delivery,
   moved by one step (below what a screen shows), so that the same cached image twice
   never gives the same bytes, as the clips' dither does;
5. **one format**: PNG at one compression level.

What this does not hide is the picture itself: its style, composition, detail and aspect
ratio. A client that kept revealed images can also recognise one it has seen before by
its look, as it can a clip by its waveform.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageOps

from arena_core.backends import BackendError, Output
from arena_core.space.blinding import BlindingError

#: Pixels of an image's longer side as delivered (the battle screen shows it smaller; a
#: visitor who opens it full size still sees detail at this size).
SIDE = 1024
#: Share of the pixel values moved by one step in each delivery.
TOUCHED_SHARE = 0.01
#: Largest image decoded, in pixels: a provider's answer beyond it is refused, not
#: decoded (Pillow's own guard warns only from 89 million). 36 million RGBA pixels took
#: 690 MB and 2.6 s to deliver, and battles are made 32 at a time.
MAX_PIXELS = 16_000_000
#: The formats a provider's image may come in (those ``Output.from_image`` admits).
FORMATS = ("PNG", "JPEG", "WEBP", "GIF")
#: PNG compression level: 3 encodes a 1024-pixel image about four times faster than
#: Pillow's default 6, for files about 10% larger.
PNG_LEVEL = 3


def picture(output: Output) -> Image.Image:
    """Steps 1-2: an image output as 8-bit RGB pixels only, its longer side :data:`SIDE`.

    Raises :class:`BlindingError` for data that is not one of :data:`FORMATS`, or larger
    than :data:`MAX_PIXELS`: that side of the battle failed, as an engine's silent clip does.
    """
    if output.modality != "image":
        raise BlindingError(f"not an image output: {output.modality}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(output.image_bytes), formats=FORMATS) as image:
                if image.width * image.height > MAX_PIXELS:
                    raise BlindingError(f"a {image.width}x{image.height} image is too large")
                # A JPEG is decoded at a reduced scale, not below twice the delivered size
                # (a 6,000-pixel photo costs an eighth of its memory); the others whole.
                image.draft("RGB", (2 * SIDE, 2 * SIDE))
                image.load()
                profile = image.info.get("icc_profile")
                upright = ImageOps.exif_transpose(image)
    except BlindingError:
        raise
    except (OSError, ValueError, Image.DecompressionBombError, Image.DecompressionBombWarning,
            SyntaxError) as exc:  # fmt: skip
        raise BlindingError(f"unreadable image ({type(exc).__name__})") from None
    rgb = _on_white(upright)  # first: Pillow's reduce refuses palette, 1-bit and 16-bit modes
    factor = max(1, max(rgb.size) // (2 * SIDE))  # a cheap reduction before Lanczos
    rgb = _in_srgb(rgb.reduce(factor) if factor > 1 else rgb, profile)
    scale = SIDE / max(rgb.size)
    size = (max(1, round(rgb.width * scale)), max(1, round(rgb.height * scale)))
    return rgb if rgb.size == size else rgb.resize(size, Image.Resampling.LANCZOS)


def checked(model_id: str, output: Output | BackendError) -> Output | BackendError:
    """The output with steps 1-2 done (:func:`picture`, kept as a PNG stored without
    compression, which :func:`deliver_images` reads back in a few milliseconds instead of
    decoding and resizing the provider's image a second time), or the error of a side whose
    image cannot be delivered blind (unreadable, too large) as a side that failed to
    generate: the battle draws again instead of failing whole when the two are delivered."""
    if isinstance(output, BackendError):
        return output
    try:
        pic = picture(output)
    except BlindingError as exc:
        return BackendError(model_id, f"output cannot be delivered blind: {exc}")
    buffer = io.BytesIO()
    pic.save(buffer, format="PNG", compress_level=0)
    return Output(modality="image", image_bytes=buffer.getvalue(), image_format="png")


def deliver_images(outputs: Sequence[Output], rng: np.random.Generator) -> tuple[Output, ...]:
    """Steps 1-5 for the images of one battle, as the visitor's browser gets them."""
    pictures = [picture(o) for o in outputs]
    width, height = max(p.width for p in pictures), max(p.height for p in pictures)
    delivered = []
    for pic in pictures:
        canvas = Image.new("RGB", (width, height), "white")
        canvas.paste(pic, ((width - pic.width) // 2, (height - pic.height) // 2))
        pixels = np.asarray(canvas, dtype=np.uint8).copy()
        flat = pixels.reshape(-1)
        touched = rng.integers(flat.size, size=int(flat.size * TOUCHED_SHARE))
        step = rng.integers(0, 2, size=touched.size, dtype=np.int16) * 2 - 1  # -1 or +1
        flat[touched] = np.clip(flat[touched].astype(np.int16) + step, 0, 255).astype(np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels, "RGB").save(buffer, format="PNG", compress_level=PNG_LEVEL)
        delivered.append(Output(modality="image", image_bytes=buffer.getvalue(),
                                image_format="png"))  # fmt: skip
    return tuple(delivered)


def _in_srgb(rgb: Image.Image, profile: bytes | None) -> Image.Image:
    """``rgb`` converted from its embedded colour profile to sRGB (what the page assumes of
    an image without one): dropped unconverted, a Display P3 or Adobe RGB image looks duller
    than it did, and so tells its model apart. A profile that cannot be read or is not for
    RGB (a CMYK one: the conversion above was Pillow's own) leaves the pixels as they are."""
    if not profile:
        return rgb
    from PIL import ImageCms

    try:
        source = ImageCms.ImageCmsProfile(io.BytesIO(profile))
        if source.profile.xcolor_space.strip() != "RGB":
            return rgb
        return ImageCms.profileToProfile(rgb, source, ImageCms.createProfile("sRGB"),
                                         outputMode="RGB")  # fmt: skip
    except (ImageCms.PyCMSError, OSError, ValueError, TypeError):
        return rgb


def _on_white(image: Image.Image) -> Image.Image:
    """8-bit RGB: transparent parts laid on white (the page's background), 16-bit and
    palette images converted."""
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):  # 16-bit grey: scale to 8 bits
        wide = np.asarray(image, dtype=np.int64)
        image = Image.fromarray(((wide + 128) // 257).clip(0, 255).astype(np.uint8))
    has_alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
    if has_alpha:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")
