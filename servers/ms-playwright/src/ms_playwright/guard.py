"""Which hosts the browser may reach: the kit's SSRF rules plus PLAYWRIGHT_ALLOW and PLAYWRIGHT_BLOCK.

browser_navigate asks before it navigates, for a clear answer; the proxy (proxy.py) asks for every
connection the browser opens, which is what enforces it.
"""

from __future__ import annotations

import contextlib
import time
from urllib.parse import urlsplit

from gaia_kit.core.benchmark_guard import mirror_pattern, mirror_sentence
from gaia_kit.core.errors import ToolFailure
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.ssrf import AllowList, IPAddress, resolve_checked

from .settings import get_playwright_settings

# Schemes that never leave the browser; everything else but http(s) and ws(s) is refused.
LOCAL_SCHEMES = {"about", "data", "blob", "javascript"}
VERDICT_TTL_S = 60.0


class UrlGuard:
    def __init__(self) -> None:
        settings = get_playwright_settings()
        self.allow = AllowList(f"{HttpSettings().allow},{settings.allow}")
        self.block = AllowList(settings.block)  # same matching rules: names, `*.` and networks
        self._verdicts: dict[tuple[str, int], tuple[float, list[IPAddress] | str]] = {}

    async def refusal(self, url: str) -> str | None:
        """None when the browser may load `url`, else one sentence saying why not."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme in LOCAL_SCHEMES:
            return None
        if scheme not in {"http", "https", "ws", "wss"}:
            return (
                f"Refused to load {url[:200]}: the browser loads only http and https pages; "
                "read local files with the filesystem or document servers."
            )
        host = parts.hostname or ""
        if not host:
            return f"Refused to load {url[:200]}: the URL has no host; check it."
        port = parts.port or (443 if scheme in {"https", "wss"} else 80)
        try:
            await self.addresses(host, port)
        except ToolFailure as exc:
            return str(exc)
        return None

    def known_refusal(self, url: str) -> str | None:
        """Why the proxy refused `url`'s host, from the verdict it just cached; None if it was not refused."""
        parts = urlsplit(url)
        default = 443 if parts.scheme in {"https", "wss"} else 80
        with contextlib.suppress(ValueError):
            cached = self._verdicts.get(((parts.hostname or "").lower(), parts.port or default))
            if cached and isinstance(cached[1], str):
                return cached[1]
        return None

    async def addresses(self, host: str, port: int) -> list[IPAddress]:
        """The addresses the browser may connect to for host:port; ToolFailure says why there are none."""
        key = (host.lower(), port)
        cached = self._verdicts.get(key)
        if cached is None or time.monotonic() - cached[0] > VERDICT_TTL_S:
            cached = (time.monotonic(), await self._check(host, port))
            if len(self._verdicts) > 4096:
                self._verdicts.clear()
            self._verdicts[key] = cached
        if isinstance(cached[1], str):
            raise ToolFailure(cached[1])
        return cached[1]

    async def _check(self, host: str, port: int) -> list[IPAddress] | str:
        if self.block.has_host(host):
            return f"Refused to load {host}: PLAYWRIGHT_BLOCK lists it."
        mirror = mirror_pattern(f"https://{host}/")  # a whole host listed as a benchmark copy
        if mirror is not None:
            return mirror_sentence(host, mirror)
        try:
            addresses = await resolve_checked(host, port, self.allow)
        except ToolFailure as exc:
            return str(exc).replace("GAIA_HTTP_ALLOW", "GAIA_HTTP_ALLOW or PLAYWRIGHT_ALLOW")
        blocked = [a for a in addresses if self.block.has_ip(a)]
        return f"Refused to load {host}: PLAYWRIGHT_BLOCK lists {blocked[0]}." if blocked else addresses
