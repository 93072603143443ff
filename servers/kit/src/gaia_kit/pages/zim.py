"""Kiwix ZIM files: the archive, its metadata, and the URLs its articles and their links answer for."""

from __future__ import annotations

import html as html_lib
import posixpath
import re
from pathlib import Path
from urllib.parse import unquote

from gaia_kit.core.errors import ToolFailure


def open_zim(path: str | Path):  # -> libzim.reader.Archive
    from libzim.reader import Archive  # imported here: only ZIM users pay for loading libzim

    try:
        return Archive(str(path))
    except RuntimeError as exc:
        raise ToolFailure(
            f"{path} is not a readable ZIM file ({exc}); download it again from Kiwix."
        ) from None


def zim_metadata(archive) -> dict[str, str]:
    found = {}
    for key in archive.metadata_keys:
        if key.startswith("Illustration"):
            continue  # images
        try:
            found[key] = bytes(archive.get_metadata(key)).decode("utf-8", errors="replace")
        except RuntimeError:
            continue
    return found


def wikipedia_language(metadata: dict[str, str]) -> str | None:
    """The language code when the ZIM is a Wikipedia dump (Kiwix names them wikipedia_<lang>_...)."""
    name = metadata.get("Name", "") or metadata.get("Title", "")
    match = re.match(r"wikipedia_([a-z][a-z0-9-]*)_", name)
    if match:
        return match.group(1)
    source = metadata.get("Source", "")
    match = re.match(r"(?:https?://)?([a-z][a-z0-9-]*)\.wikipedia\.org", source)
    return match.group(1) if match else None


def zim_url(metadata: dict[str, str], archive_name: str, path: str) -> str:
    language = wikipedia_language(metadata)
    article = path.removeprefix("A/")  # the old namespace scheme prefixes articles with A/
    if language:
        return f"https://{language}.wikipedia.org/wiki/{article}"
    return f"zim://{archive_name}/{article}"


_HREF = re.compile(r"""(<a\b[^>]*?\bhref\s*=\s*)(["'])([^"']+)\2""", flags=re.I)


def zim_target(href: str, entry_path: str) -> str | None:
    """The ZIM path a link inside an article points to (fragment and query dropped); None if it leaves."""
    href = html_lib.unescape(href).strip()
    if (
        not href
        or href.startswith(("#", "/"))
        or re.match(r"[a-z][a-z0-9+.-]*://|(?:mailto|javascript|data|tel):", href, re.I)
    ):
        return None
    path = unquote(re.split(r"[#?]", href, maxsplit=1)[0])
    if not path:
        return None
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(entry_path), path))
    return None if resolved.startswith("..") or resolved == "." else resolved


def zim_targets(html: str, entry_path: str) -> list[str]:
    """Every ZIM path the article links to, in order, duplicates kept."""
    return [t for m in _HREF.finditer(html) if (t := zim_target(m.group(3), entry_path)) is not None]


def absolute_links(html: str, entry_path: str, metadata: dict[str, str], archive_name: str) -> str:
    """The article with its links inside the ZIM rewritten to the articles' URLs (Wikipedia's, for a dump)."""

    def rewrite(match: re.Match[str]) -> str:
        target = zim_target(match.group(3), entry_path)
        if target is None:
            return match.group(0)
        return f"{match.group(1)}{match.group(2)}{zim_url(metadata, archive_name, target)}{match.group(2)}"

    return _HREF.sub(rewrite, html)
