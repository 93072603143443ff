"""The two-page loopback site the browsers' record/replay tests browse: a page with its stylesheet and
a script that writes into it (so both must have been served), and a link to a second page.

    with LoopbackServer(keepers_site()) as site:
        ...open site.url("/first.html"), find SCRIPTED in it, follow "Next page", find KEPT...
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

SCRIPTED = "12 keepers listed by the script"
KEPT = "Kept the Hellisoy light for 31 years."
FIRST = """<!doctype html><html><head><title>Keepers</title><link rel="stylesheet" href="/style.css">
<script src="/app.js"></script></head><body><h1>Lighthouse keepers</h1><p id="count">loading</p>
<a href="/second.html">Next page</a></body></html>"""
SECOND = f"""<!doctype html><html><head><title>Ole Brekke</title></head><body><h1>Ole Brekke</h1>
<p>{KEPT}</p></body></html>"""
SCRIPT = f"document.addEventListener('DOMContentLoaded', () => {{ document.getElementById('count').textContent = '{SCRIPTED}'; }});"


def keepers_site() -> Starlette:
    return Starlette(
        routes=[
            Route("/first.html", lambda r: HTMLResponse(FIRST)),
            Route("/second.html", lambda r: HTMLResponse(SECOND)),
            Route("/style.css", lambda r: Response("h1 { color: navy; }", media_type="text/css")),
            Route("/app.js", lambda r: Response(SCRIPT, media_type="application/javascript")),
        ]
    )
