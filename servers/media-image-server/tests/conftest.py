import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from gaia_kit_testing.fake_openai import llm_fixtures
from gaia_kit_testing.server_call import call_fixture
from media_image_server.server import server

no_llm, fake = llm_fixtures("IMAGE", model="fake-vision", api_key="sk-image-secret")


call = call_fixture(server)


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A loopback web site serving tmp_path/site, allow-listed for the kit's HTTP client, no cache."""
    root = tmp_path / "site"
    root.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(root))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "off")
    yield SimpleNamespace(root=root, url=f"http://127.0.0.1:{httpd.server_port}")
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the test output has no use for access logs
        pass
