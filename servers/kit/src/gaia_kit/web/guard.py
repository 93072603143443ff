"""Which hosts a browser may reach: the SSRF rules (GAIA_HTTP_ALLOW), the benchmark mirror list, and
the server's own allow and block lists (ms-playwright: PLAYWRIGHT_ALLOW, PLAYWRIGHT_BLOCK).

A server may ask before it navigates, for a clear answer; the proxy (proxy.py) asks for every
connection the browser opens, which is what enforces it.

    guard = UrlGuard(allow=settings.allow, block=settings.block, prefix="PLAYWRIGHT")
    why = await guard.refusal("http://169.254.169.254/")  # a sentence, or None when allowed
"""

from __future__ import annotations

import contextlib
import time
from urllib.parse import urlsplit

from gaia_kit.core.benchmark_guard import mirror_pattern, mirror_sentence
from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import settings
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.ssrf import AllowList, IPAddress, resolve_checked

# Schemes that never leave the browser; everything else but http(s) and ws(s) is refused.
LOCAL_SCHEMES = {"about", "data", "blob", "javascript"}
VERDICT_TTL_S = 60.0


class UrlGuard:
    """GAIA_HTTP_ALLOW is taken once, here; `allow` and `block` are named `{prefix}_ALLOW`, `{prefix}_BLOCK`."""

    def __init__(self, allow: str = "", block: str = "", prefix: str = "") -> None:
        self.allow = AllowList(f"{settings(HttpSettings).allow},{allow}")
        self.block = AllowList(block)  # same matching rules: names, `*.` and networks
        self.prefix = prefix
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
            return f"Refused to load {host}: {self.prefix}_BLOCK lists it."
        mirror = mirror_pattern(f"https://{host}/")  # a whole host listed as a benchmark copy
        if mirror is not None:
            return mirror_sentence(host, mirror)
        try:
            addresses = await resolve_checked(host, port, self.allow)
        except ToolFailure as exc:
            refused = str(exc)
            return (
                refused.replace("GAIA_HTTP_ALLOW", f"GAIA_HTTP_ALLOW or {self.prefix}_ALLOW")
                if self.prefix
                else refused
            )
        blocked = [a for a in addresses if self.block.has_ip(a)]
        return f"Refused to load {host}: {self.prefix}_BLOCK lists {blocked[0]}." if blocked else addresses
