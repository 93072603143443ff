"""Which Wiki answers: the configured ZIM for its own language, the live API for the rest.

The choice rests on the settings alone (WIKI_BACKEND, WIKI_ZIM_PATH, GAIA_CORPUS_PATH), read once
per process like every setting; the archive itself is opened once per file.
"""

from __future__ import annotations

from typing import Any

from gaia_kit import ToolFailure

from .mediawiki import MediaWiki, api_template
from .offline import ZimWiki, configured_zim
from .wiki import Wiki

LIVE = "live MediaWiki action API, cached by the gaia-env HTTP record/replay cache"


def wiki_for(language: str) -> Wiki:
    live = MediaWiki(language)
    zim = configured_zim()
    return ZimWiki(zim, live) if zim is not None and zim.language in ("", language) else live


def describe() -> str:
    zim = configured_zim()
    return LIVE if zim is None else f"{zim.describe()}; other languages and get_article_history: {LIVE}"


def check() -> dict[str, Any]:
    """What `gaia-env doctor` says of this server."""
    try:
        zim = configured_zim()
    except ToolFailure as exc:
        return {"backend": f"live MediaWiki API at {api_template()}", "missing": [str(exc)]}
    return {
        "backend": describe() if zim else f"live MediaWiki API at {api_template()}",
        "notes": [
            "answers are cached by the kit's HTTP cache (GAIA_HTTP_CACHE_MODE=replay for offline reruns)"
        ],
    }
