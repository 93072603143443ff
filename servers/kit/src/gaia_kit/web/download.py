"""Downloads: a GET streamed into a file chunk by chunk, so a large body never sits in memory whole."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx

from gaia_kit.web.errors import TooLarge, checked
from gaia_kit.web.recording import Recorder, cache_key, cache_mode
from gaia_kit.web.response import HttpResponse
from gaia_kit.web.transport import Transport


async def download_to_file(
    transport: Transport, recorder: Recorder, request: httpx.Request, path: Path, max_bytes: int,
    timeout_s: float | None,
) -> HttpResponse:  # fmt: skip
    """GET `request` into the file `path`; see HttpClient.download."""
    settings = transport.settings
    mode = cache_mode(settings, "GET", None)
    key = cache_key(request, None) if mode != "off" else ""
    hit = await recorder.lookup(request, mode, key)
    if hit is not None:
        if len(hit.content) > max_bytes:
            raise TooLarge(request.url, max_bytes)
        if hit.status < 300:
            await anyio.Path(path).write_bytes(hit.content)
            hit = HttpResponse(hit.status, hit.headers, b"", hit.url, from_cache=True)
        return checked(hit, settings.attempts)
    async with await anyio.open_file(path, "w+b") as sink:
        response = await transport.fetch(request, max_bytes, sink, timeout_s)
    size = (await anyio.Path(path).stat()).st_size
    if mode == "read-write" and size <= settings.cache_max_file_bytes:
        body = await anyio.Path(path).read_bytes() if response.status < 300 else response.content
        await recorder.record(request, key, response, body)
    return checked(response, settings.attempts)
