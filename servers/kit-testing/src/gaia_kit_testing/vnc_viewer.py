"""A person watching the VNC view, played by a headless Chromium: open noVNC, connect, look at the canvas."""

from __future__ import annotations

import io
import time

from gaia_kit.web.chromium import launch_options
from PIL import Image

Colour = tuple[int, int, int]
MAGENTA: Colour = (255, 0, 170)


def magenta_page(text: str) -> str:
    """A page a person watching can tell from afar: all magenta, with `text` for the agent to read."""
    return (
        "<html><head><title>Colour</title></head><body style='margin:0;background:rgb(255,0,170)'>"
        f"<div style='width:100vw;height:100vh'>{text}</div></body></html>"
    )


def colour_fraction(png: bytes, colour: Colour, tolerance: int = 40) -> float:
    """The share of pixels within `tolerance` (per channel) of `colour`; VNC encodings may shift it a little."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    pixels = image.get_flattened_data()
    near = sum(1 for p in pixels if all(abs(a - b) <= tolerance for a, b in zip(p, colour, strict=True)))
    return near / max(1, len(pixels))


def vnc_colour_fraction(url: str, colour: Colour, want: float = 0.3, timeout: float = 60) -> float:
    """Open `url` (noVNC's vnc.html?autoconnect=true) and return how much of the remote screen shows
    `colour`, as soon as it reaches `want` (frames arrive after the connection), else the best seen."""
    from playwright.sync_api import sync_playwright

    best = 0.0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**{**launch_options(), "headless": True})
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(url)
            canvas = page.locator("#noVNC_container canvas")
            canvas.wait_for(state="visible", timeout=timeout * 1000)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                best = max(best, colour_fraction(canvas.screenshot(), colour))
                if best >= want:
                    break
                time.sleep(0.5)
        finally:
            browser.close()
    return best
