"""Image metadata with Pillow: format, size, mode, frames, and EXIF with GPS and timestamps made readable."""

from __future__ import annotations

from PIL import ExifTags, Image
from pydantic import BaseModel

from .images import Opened

MAX_EXIF_VALUE_CHARS = 200
MAX_TIMED_FRAMES = 100
# Tags that are binary blobs or offsets: no use to an agent.
SKIPPED_TAGS = {"MakerNote", "ExifOffset", "GPSInfo", "PrintImageMatching", "ComponentsConfiguration"}


def describe(opened: Opened) -> str:
    with opened.image:
        return _describe(opened)


class ImageFacts(BaseModel):
    file: str
    path: str
    size_bytes: int
    format: str | None
    width: int
    height: int
    mode: str
    transparency: bool
    frames: int


def described(opened: Opened) -> tuple[str, ImageFacts]:
    """The text describe() gives, and its main facts as data."""
    with opened.image:
        image = opened.image
        facts = ImageFacts(
            file=opened.name, path=opened.shown, size_bytes=opened.size_bytes, format=image.format,
            width=image.width, height=image.height, mode=image.mode, transparency=_has_alpha(image),
            frames=getattr(image, "n_frames", 1),
        )  # fmt: skip
        return _describe(opened), facts


def _describe(opened: Opened) -> str:
    image = opened.image
    lines = [
        f"File: {opened.name}",
        f"Path: {opened.shown}",
        f"File size: {opened.size_bytes:,} bytes",
        f"Format: {image.format or 'unknown'}"
        + (f" ({image.format_description})" if image.format_description else ""),
        f"Size: {image.width} x {image.height} pixels",
        f"Mode: {image.mode}" + (" (with transparency)" if _has_alpha(image) else ""),
    ]
    if opened.mislabelled:
        lines.append(f"Note: {opened.mislabelled}.")
    dpi = image.info.get("dpi")
    if dpi:
        lines.append(f"Resolution: {float(dpi[0]):.0f} x {float(dpi[1]):.0f} dpi")
    if image.info.get("icc_profile"):
        lines.append("Color profile: embedded ICC profile")
    lines += _frames(image)
    lines += _exif(image)
    return "\n".join(lines)


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info


def _frames(image: Image.Image) -> list[str]:
    count = getattr(image, "n_frames", 1)  # cheap: Pillow skips through the frame headers
    if count <= 1:
        return []
    durations = []
    for index in range(min(count, MAX_TIMED_FRAMES)):
        image.seek(index)  # seeking decodes the frame, so long animations are timed in part
        durations.append(image.info.get("duration") or 0)
    image.seek(0)
    loop = image.info.get("loop")
    listed = ", ".join(str(d) for d in durations)
    if count > len(durations):
        timing = f"Frame durations in ms (first {len(durations)} frames): {listed}"
    else:
        timing = f"Duration: {sum(durations) / 1000:.2f} s (frame durations in ms: {listed})"
    lines = [f"Animated: yes, {count} frames", timing]
    if loop is not None:
        lines.append(f"Loop: {'forever' if loop == 0 else f'{loop} times'}")
    return lines


def _exif(image: Image.Image) -> list[str]:
    exif = image.getexif()
    if not exif:
        return ["EXIF: none"]
    lines = ["EXIF:"]
    entries = dict(exif)
    entries.update(exif.get_ifd(ExifTags.IFD.Exif))
    for tag, value in entries.items():
        name = ExifTags.TAGS.get(tag, f"Tag {tag:#06x}")
        if name in SKIPPED_TAGS or isinstance(value, bytes) and len(value) > 64:
            continue
        lines.append(f"  {name}: {_value(value)}")
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    if gps:
        lines += _gps(gps)
    return lines


def _gps(gps: dict) -> list[str]:
    named = {ExifTags.GPSTAGS.get(tag, str(tag)): value for tag, value in gps.items()}
    lines = ["GPS:"]
    latitude = _degrees(named.get("GPSLatitude"), named.get("GPSLatitudeRef"), "S")
    longitude = _degrees(named.get("GPSLongitude"), named.get("GPSLongitudeRef"), "W")
    if latitude is not None and longitude is not None:
        lines.append(f"  Position: {latitude:.6f}, {longitude:.6f} (decimal degrees, + is north/east)")
    altitude = named.get("GPSAltitude")
    if altitude is not None:
        below = named.get("GPSAltitudeRef") in (1, b"\x01")
        lines.append(f"  Altitude: {'-' if below else ''}{float(altitude):.1f} m")
    stamp = named.get("GPSTimeStamp")
    if named.get("GPSDateStamp") or stamp:
        clock = ":".join(f"{int(float(part)):02d}" for part in stamp) if stamp else ""
        lines.append(f"  Time (UTC): {named.get('GPSDateStamp', '')} {clock}".rstrip())
    for name, value in named.items():
        if name not in {
            "GPSLatitude",
            "GPSLongitude",
            "GPSLatitudeRef",
            "GPSLongitudeRef",
            "GPSAltitude",
            "GPSAltitudeRef",
            "GPSTimeStamp",
            "GPSDateStamp",
            "GPSVersionID",
        }:
            lines.append(f"  {name}: {_value(value)}")
    return lines


def _degrees(parts: object, ref: object, negative: str) -> float | None:
    try:
        degrees, minutes, seconds = (float(p) for p in parts)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    value = degrees + minutes / 60 + seconds / 3600
    return -value if str(ref).strip().upper() == negative else value


def _value(value: object) -> str:
    if isinstance(value, bytes):
        text = value.rstrip(b"\x00").decode("utf-8", "replace")
    elif isinstance(value, tuple):
        text = ", ".join(_value(v) for v in value)
    elif hasattr(value, "numerator") and hasattr(value, "denominator") and not isinstance(value, int):
        number = float(value) if value.denominator else 0.0
        text = f"{number:g}"
    else:
        text = str(value).rstrip("\x00").strip()
    return text if len(text) <= MAX_EXIF_VALUE_CHARS else text[:MAX_EXIF_VALUE_CHARS] + "..."
