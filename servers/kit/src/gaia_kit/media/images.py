"""Images sent to vision models: flattened onto white, downscaled, encoded as a data URL.

media-image-server sends the images an agent names, media-video-server the frames it samples; both
send them the same way (the OpenAI vision format takes `data:` URLs in `image_url` content parts).
"""

from __future__ import annotations

import base64
import io

from PIL import Image


def flattened(image: Image.Image, mode: str = "RGB") -> Image.Image:
    """The image on a white background in `mode`: transparency would turn into black otherwise."""
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, rgba)
    return image.convert(mode)


def data_url(image: Image.Image, max_side: int) -> str:
    """The image, downscaled to `max_side` at most, as a PNG (or JPEG when PNG is large) data URL."""
    picture = flattened(image)
    picture.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    picture.save(buffer, "PNG", optimize=False)
    kind = "png"
    # A photo: JPEG is a fraction of the size, the model sees no difference, and ten images still fit
    # in the 20 MB request that common vision APIs accept.
    if buffer.tell() > 3 * 2**19:
        buffer = io.BytesIO()
        picture.save(buffer, "JPEG", quality=90)
        kind = "jpeg"
    return f"data:image/{kind};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"


def image_part(url: str) -> dict:
    """One image as a user-message content part."""
    return {"type": "image_url", "image_url": {"url": url}}
