"""gaia_kit_testing: what gaia-env's tests and benchmarks share, kept out of the kit that servers ship.

`from gaia_kit_testing import session_call, ok, failed` for the checks (`build_deep_tree` for removals); the fixtures (kit_env,
fake_web, ...) come from `gaia_kit_testing.fixtures`, which the root conftest loads as a plugin; a
server's `call` fixture from `server_call`; the fakes live in `fake_web`, `fake_search`, `fake_openai`,
`fake_wiki`, `fake_arxiv`, `fake_wayback`, `fake_site`, on `loopback`'s server; `gateway` starts a real
`gaia-env serve`, `probe` is the server its tests run, `vnc_viewer` watches its VNC view; `verl_loop`
drives the trainer's VeRL agent loop.
"""

from .checks import SPOKEN_SENTENCE, failed, ok, run_measured, sent_content, session_call, text
from .trees import build_deep_tree

__all__ = [
    "SPOKEN_SENTENCE",
    "build_deep_tree",
    "failed",
    "ok",
    "run_measured",
    "sent_content",
    "session_call",
    "text",
]
