"""Purpose-built pages on 127.0.0.1, and MCP sessions on the one real Chromium the tests share."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing import session_call
from gaia_kit_testing.loopback import LoopbackServer
from ms_playwright.browser import host
from ms_playwright.server import server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket


def html(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>")


PAGES = {
    "/": (
        "Home",
        '<h1>Test home</h1><a href="/form">Form page</a> <a href="/dialogs">Dialogs page</a>'
        '<a href="/popup-source">Popups</a>',
    ),
    "/form": (
        "Form",
        """<form onsubmit="event.preventDefault(); show()">
        <label>Name <input id="name" name="name"></label>
        <label>Colour <select id="colour"><option value="r">Red</option><option value="g">Green</option>
          <option value="b">Blue</option></select></label>
        <label><input type="checkbox" id="agree"> Agree</label>
        <label><input type="radio" name="size" value="s"> Small</label>
        <label><input type="radio" name="size" value="l"> Large</label>
        <label>Volume <input type="range" id="volume" min="0" max="10" value="2"></label>
        <button type="submit">Send</button></form>
        <p id="out">nothing sent</p>
        <script>
        function show() {
          const size = document.querySelector('input[name=size]:checked');
          document.getElementById('out').textContent = 'sent ' + [document.getElementById('name').value,
            document.getElementById('colour').value, document.getElementById('agree').checked,
            size ? size.value : '-', document.getElementById('volume').value].join('|');
        }
        document.getElementById('name').addEventListener('keydown', e => { window.lastKey = e.key; });
        </script>""",
    ),
    "/upload": (
        "Upload",
        """<label>Attachment <input type="file" id="file" multiple></label><p id="out">no file</p>
        <script>document.getElementById('file').onchange = e =>
          document.getElementById('out').textContent = 'chosen ' + [...e.target.files].map(f => f.name + ':' + f.size).join(',');
        </script>""",
    ),
    "/dialogs": (
        "Dialogs",
        """<button onclick="alert('Hello there'); document.getElementById('out').textContent='alert closed'">Alert</button>
        <button onclick="document.getElementById('out').textContent = confirm('Sure?') ? 'confirmed' : 'declined'">Confirm</button>
        <button onclick="document.getElementById('out').textContent = 'name: ' + prompt('Your name?')">Prompt</button>
        <p id="out">idle</p>""",
    ),
    "/popup-source": ("Popups", '<a href="/form" target="_blank">Open form in new tab</a>'),
    "/console": (
        "Console",
        """<button onclick="fetch('/api/data').then(r => r.json()).then(d => {
          console.log('got ' + d.value); document.getElementById('out').textContent = 'value ' + d.value; })">Load data</button>
        <p id="out">empty</p>
        <script>console.log('page says hello'); console.warn('careful now');
        fetch('/api/data?on=load');</script>""",
    ),
    "/drag": (
        "Drag",
        """<div id="item" draggable="true" role="button" aria-label="Draggable card"
          ondragstart="event.dataTransfer.setData('text', 'card')" style="width:80px;height:40px;background:#8c8">Card</div>
        <div id="zone" role="region" aria-label="Drop zone" ondragover="event.preventDefault()"
          ondrop="event.preventDefault(); this.textContent = 'Dropped ' + event.dataTransfer.getData('text')"
          style="width:200px;height:100px;margin-top:40px;background:#ccf">Drop here</div>""",
    ),
    "/hover": (
        "Hover",
        """<style>#menu ul { display: none } #menu:hover ul { display: block }</style>
        <nav id="menu"><button>Products</button><ul><li><a href="/form">Secret item</a></li></ul></nav>""",
    ),
    "/wait": (
        "Wait",
        """<p id="status">Loading data</p><script>
        setTimeout(() => document.getElementById('status').remove(), 400);
        setTimeout(() => { const p = document.createElement('p'); p.textContent = 'All done'; document.body.append(p); }, 700);
        </script>""",
    ),
    "/download": ("Download", '<a href="/files/report.csv">Get the report</a>'),
    "/big": ("Big", "".join(f"<p>Paragraph number {n} with some filler text.</p>" for n in range(3000))),
    "/private-xhr": (
        "Private XHR",
        "<script>fetch('http://10.0.0.1/secret').catch(e => console.log('blocked'))</script>",
    ),
    "/socket": (
        "Socket",
        """<p id="out">waiting</p><script>
        function open(url, label) {
          const ws = new WebSocket(url);
          ws.onopen = () => ws.send('hi');
          ws.onmessage = e => document.getElementById('out').textContent += ' ' + label + ':' + e.data;
          ws.onerror = () => document.getElementById('out').textContent += ' ' + label + ':refused';
        }
        open('ws://' + location.host + '/ws', 'local'); open('ws://10.0.0.1/ws', 'private');
        </script>""",
    ),
    "/colour": ("Colour", '<div style="position:fixed;inset:0;background:rgb(255,0,0)">Red</div>'),
}


async def page_route(request: Request) -> Response:
    title, body = PAGES[request.url.path]
    return html(title, body)


async def data(request: Request) -> Response:
    return JSONResponse({"value": 42})


async def report_csv(request: Request) -> Response:
    return Response(
        "a,b\n1,2\n",
        media_type="text/csv",
        headers={"Content-Disposition": 'attachment; filename="report.csv"'},
    )


async def set_cookie(request: Request) -> Response:
    response = html("Cookie set", f"<p>set {request.query_params['v']}</p>")
    response.set_cookie("who", request.query_params["v"])
    return response


async def whoami(request: Request) -> Response:
    return html("Who", f"<p>cookie is {request.cookies.get('who', 'none')}</p>")


async def never(request: Request) -> Response:
    async def body() -> AsyncIterator[bytes]:
        yield b"<!doctype html><html><head><title>Slow</title></head><body><p>Partial content arrived</p>"
        await asyncio.sleep(60)
        yield b"</body></html>"

    return StreamingResponse(body(), media_type="text/html")


async def echo(socket: WebSocket) -> None:
    await socket.accept()
    await socket.send_text(f"echo {await socket.receive_text()}")
    await socket.close()


def app() -> Starlette:
    routes = [Route(path, page_route) for path in PAGES]
    routes += [
        Route("/api/data", data),
        Route("/files/report.csv", report_csv),
        Route("/set-cookie", set_cookie),
        Route("/whoami", whoami),
        Route("/never", never),
        WebSocketRoute("/ws", echo),
        Route("/to-metadata", lambda request: RedirectResponse("http://169.254.169.254/latest/meta-data/")),
    ]
    return Starlette(routes=routes)


@pytest.fixture(scope="session")
def site() -> Iterator[LoopbackServer]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
        for name, value in {
            "NAVIGATION_TIMEOUT_S": "3",
            "ACTION_TIMEOUT_S": "3",
            "SETTLE_S": "2",
            "MAX_WAIT_S": "4",
        }.items():
            patch.setenv(f"PLAYWRIGHT_{name}", value)
        forget_settings()
        host._guard = None  # read GAIA_HTTP_ALLOW afresh
        with LoopbackServer(app()) as served:
            yield served
        host._guard = None
    forget_settings()


_ids = itertools.count()


@pytest.fixture
async def browse(site, kit_env):
    """invoke(tool, **arguments) in a fresh browser session; the session ends with the test."""
    session_id = f"test-{next(_ids)}"
    async with session_call(server, kit_env.workspace, session_id) as invoke:
        yield invoke
    await host.end_session(session_id)
