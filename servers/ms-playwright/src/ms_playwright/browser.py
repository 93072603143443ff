"""One Chromium per replica, one BrowserContext per session, driven from a thread of its own.

Playwright's objects belong to the event loop that created them. The browser gets its own loop in
a daemon thread, and tools hand it coroutines: the server's loop never waits on the browser's
protocol, and whichever loop calls in (stdio server, tests) shares the one browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from gaia_kit.core.errors import Busy, ToolFailure
from gaia_kit.core.paths import PathGuard, free_path
from gaia_kit.core.quota import place, staged
from gaia_kit.core.quota_accounting import QuotaExceeded
from gaia_kit.core.session import Session
from gaia_kit.core.settings import get_settings, settings
from gaia_kit.web.chromium import launch_options
from gaia_kit.web.guard import UrlGuard
from gaia_kit.web.proxy import REFUSED_HEADER, GuardProxy
from playwright.async_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Dialog,
    Download,
    FileChooser,
    Locator,
    Page,
    Playwright,
    Request,
    Response,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError

from .replay import route_through_cache
from .settings import PlaywrightSettings

logger = logging.getLogger("ms_playwright")
T = TypeVar("T")

REF = re.compile(r"\[ref=([a-z0-9]+)\]")
VALID_REF = re.compile(r"^(?:f\d+)?e\d+$")
MAX_LOG_ENTRIES = 1000


def stale_ref(ref: str) -> ToolFailure:
    return ToolFailure(f"Ref {ref} not found in the current page snapshot. Capture a new snapshot.")


@dataclass
class NetworkEntry:
    method: str
    url: str
    status: str = "pending"


@dataclass
class Tab:
    """A page and what the agent has been told about it."""

    page: Page
    console: list[str] = field(default_factory=list)
    console_reported: int = 0
    requests: dict[Request, NetworkEntry] = field(default_factory=dict)
    inflight: set[Request] = field(default_factory=set)
    refs: set[str] = field(default_factory=set)
    dialog: Dialog | None = None
    chooser: FileChooser | None = None
    modal: asyncio.Event = field(default_factory=asyncio.Event)
    pending: asyncio.Future[Any] | None = None
    """An action still running because a dialog it opened blocks the page."""
    crashed: bool = False

    def log(self, line: str) -> None:
        if len(self.console) >= MAX_LOG_ENTRIES:
            drop = len(self.console) - MAX_LOG_ENTRIES + 1
            del self.console[:drop]
            self.console_reported = max(0, self.console_reported - drop)
        self.console.append(line)

    def new_console(self) -> list[str]:
        fresh = self.console[self.console_reported :]
        self.console_reported = len(self.console)
        return fresh

    async def locate(self, ref: str) -> Locator:
        """The element behind a ref of this tab's latest snapshot."""
        if not VALID_REF.match(ref or "") or ref not in self.refs:
            raise stale_ref(ref)
        locator = self.page.locator(f"aria-ref={ref}")
        # An unknown aria-ref does not fail: it waits for the action timeout. Count first.
        if await locator.count() == 0:
            raise stale_ref(ref)
        return locator


@dataclass
class BrowserSession:
    """One agent session's context: its cookies, storage, tabs and downloads, shared with no one."""

    id: str
    context: BrowserContext
    paths: PathGuard
    guard: UrlGuard
    tabs: list[Tab] = field(default_factory=list)
    current: int = 0
    downloads: list[str] = field(default_factory=list)
    saving: set[asyncio.Future[None]] = field(default_factory=set)
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=time.monotonic)

    @property
    def tab(self) -> Tab | None:
        return self.tabs[self.current] if self.tabs else None

    async def page_tab(self) -> Tab:
        """The current tab, opening a blank one when the session has none."""
        if not self.tabs:
            tab = self.tab_of(await self.context.new_page())
            self.current = self.tabs.index(tab)
        return self.tabs[self.current]

    def tab_of(self, page: Page) -> Tab:
        for tab in self.tabs:
            if tab.page is page:
                return tab
        tab = Tab(page)
        self.tabs.append(tab)
        self._watch(tab)
        return tab

    def _watch(self, tab: Tab) -> None:
        page = tab.page
        page.on("console", lambda message: tab.log(_console_line(message)))
        page.on("pageerror", lambda error: tab.log(f"[pageerror] {error}"))
        page.on("request", lambda request: self._request(tab, request))
        page.on("response", lambda response: self._response(tab, response))
        page.on("requestfinished", lambda request: tab.inflight.discard(request))
        page.on("requestfailed", lambda request: self._failed(tab, request))
        page.on("dialog", lambda dialog: _opened(tab, dialog=dialog))
        page.on("filechooser", lambda chooser: _opened(tab, chooser=chooser))
        page.on("download", self._download)
        page.on("crash", lambda _: setattr(tab, "crashed", True))
        page.on("close", lambda _: self.forget(tab))

    def _request(self, tab: Tab, request: Request) -> None:
        # "Since loading the page": a new document in the main frame starts the list again.
        if request.is_navigation_request() and request.frame.parent_frame is None:
            tab.requests.clear()
        if len(tab.requests) < MAX_LOG_ENTRIES:
            tab.requests[request] = NetworkEntry(request.method, request.url)
        tab.inflight.add(request)

    def _response(self, tab: Tab, response: Response) -> None:
        entry = tab.requests.get(response.request)
        if entry is not None:
            entry.status = f"{response.status} {response.status_text}".strip()
        refused = response.headers.get(REFUSED_HEADER.lower())
        if response.status == 403 and refused:
            self.refused(refused)

    def _failed(self, tab: Tab, request: Request) -> None:
        tab.inflight.discard(request)
        entry = tab.requests.get(request)
        if entry is not None:
            entry.status = f"failed: {request.failure or 'unknown error'}"
        # The proxy's refusal may surface as a tunnel or CORS failure: its verdict says which it was.
        why = self.guard.known_refusal(request.url)
        if why:
            self.refused(why)

    def refused(self, why: str) -> None:
        if why not in self.refusals and len(self.refusals) < 20:
            self.refusals.append(why)

    def forget(self, tab: Tab) -> None:
        if tab in self.tabs:
            index = self.tabs.index(tab)
            self.tabs.remove(tab)
            if self.current > index or self.current >= len(self.tabs):
                self.current = max(0, self.current - 1)

    def _download(self, download: Download) -> None:
        saving = asyncio.ensure_future(self._save(download))
        self.saving.add(saving)
        saving.add_done_callback(self.saving.discard)

    async def _save(self, download: Download) -> None:
        """Downloads land in the session workspace, under downloads/, never overwriting a file, and
        only within the session's disk quota."""
        name = Path(download.suggested_filename).name or "download"
        folder = self.paths.resolve("downloads", write=True)
        target = self.paths.resolve(str(free_path(folder, name)), write=True)
        try:
            finished = await download.path()  # Chromium's own copy, once the download completes
            size = finished.stat().st_size
            cap = settings(PlaywrightSettings).max_download_bytes
            if size > cap:
                await download.delete()
                self.downloads.append(
                    f"Download of {download.url[:200]} discarded: {size} bytes is over PLAYWRIGHT_MAX_DOWNLOAD_BYTES ({cap})."
                )
                return
            with staged(target) as copy:
                await download.save_as(copy)
                await asyncio.to_thread(place, copy, target, replace=False)
            self.downloads.append(f"Downloaded {download.url[:200]} to {self.paths.display(target)}")
        except QuotaExceeded as exc:
            await download.delete()
            self.downloads.append(f"Download of {download.url[:200]} discarded: {exc}")
        except (PlaywrightError, OSError) as exc:
            self.downloads.append(f"Download of {download.url[:200]} failed: {first_line(exc)}")


def _console_line(message: ConsoleMessage) -> str:
    where = message.location.get("url") if message.location else ""
    line = message.location.get("lineNumber") if message.location else None
    suffix = f" @ {where}:{line}" if where else ""
    return f"[{message.type}] {message.text[:2000]}{suffix}"


def _opened(tab: Tab, *, dialog: Dialog | None = None, chooser: FileChooser | None = None) -> None:
    if dialog is not None:
        tab.dialog = dialog
    if chooser is not None:
        tab.chooser = chooser
    tab.modal.set()


def first_line(exc: BaseException) -> str:
    """Playwright's message without its call log."""
    text = str(exc).split("Call log:")[0].strip()
    text = text.split("\n")[0].strip()
    return re.sub(r"^\w+\.\w+: ", "", text)[:300] or type(exc).__name__


class RenderSlots:
    """Admission of navigations: Chromium renders on the machine's cores, so a replica loads at most
    PLAYWRIGHT_MAX_NAVIGATIONS documents at once (default: one per core), and a navigation that would
    wait longer than PLAYWRIGHT_NAVIGATION_QUEUE_S for a slot is answered busy at once instead."""

    HOLD_S = 2.0
    """A document still loading after this waits on its network, not on the cores: it frees its slot,
    so one session's slow page never holds up the others."""

    def __init__(self) -> None:
        self.loading = 0
        self.waiting = 0
        self.hold_s = 0.5
        """Moving average of how long a navigation held its slot."""
        self._semaphore: asyncio.Semaphore | None = None

    @property
    def slots(self) -> int:
        return settings(PlaywrightSettings).max_navigations or os.cpu_count() or 1

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.slots)
        queue_s = settings(PlaywrightSettings).navigation_queue_s
        if self._semaphore.locked():
            expected = math.ceil((self.waiting + 1) / self.slots) * self.hold_s
            if expected > queue_s:
                raise Busy(
                    f"The browser is busy: {self.loading} pages are loading and {self.waiting} more wait "
                    f"for this replica's {self.slots} rendering slots",
                    max(1, math.ceil(expected - queue_s / 2)),
                )
        self.waiting += 1
        try:
            await self._semaphore.acquire()
        finally:
            self.waiting -= 1
        self.loading += 1
        started = time.monotonic()
        try:
            yield
        finally:
            self.loading -= 1
            self._semaphore.release()
            self.hold_s += 0.2 * (time.monotonic() - started - self.hold_s)


class BrowserHost:
    """The replica's browser: launched on first use, relaunched when it dies."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread_lock = threading.Lock()
        self._launch_lock: asyncio.Lock | None = None
        self._create_lock: asyncio.Lock | None = None
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._guard: UrlGuard | None = None
        self._proxy: GuardProxy | None = None
        self._reaper: asyncio.Task[None] | None = None
        self.sessions: dict[str, BrowserSession] = {}
        self._evicted: set[str] = set()
        self.render = RenderSlots()

    # -- crossing into the browser's thread --------------------------------------------------

    def _browser_loop(self) -> asyncio.AbstractEventLoop:
        with self._thread_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="browser", daemon=True).start()
                self._loop = loop
            return self._loop

    async def call(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run `work()` on the browser's loop; cancelling the caller cancels it there too."""
        future = asyncio.run_coroutine_threadsafe(_coroutine(work), self._browser_loop())
        return await asyncio.wrap_future(future)

    async def with_session(self, session: Session, work: Callable[[BrowserSession], Awaitable[T]]) -> T:
        """Run `work` on the session's context, one call at a time per session."""

        async def inside() -> T:
            browser_session = await self._session(session)
            async with browser_session.lock:
                browser_session.last_used = time.monotonic()
                try:
                    return await work(browser_session)
                finally:
                    browser_session.last_used = time.monotonic()

        return await self.call(inside)

    # -- the browser ----------------------------------------------------------------------------

    async def browser(self) -> Browser:
        if self._launch_lock is None:
            self._launch_lock = asyncio.Lock()
        async with self._launch_lock:
            if self._browser is None or not self._browser.is_connected():
                await self._launch()
            assert self._browser is not None
            return self._browser

    async def _launch(self) -> None:
        if self._browser is not None:
            logger.warning("the browser disconnected; relaunching it")
            for session in self.sessions.values():
                self._evicted.add(session.id)
            self.sessions.clear()
            with contextlib.suppress(Exception):
                await self._browser.close()
            self._browser = None
        options = launch_options()
        if self._proxy is None:
            self._proxy = GuardProxy(self.guard)
        await self._proxy.start()
        options["args"] = [*options["args"], *self._proxy.chromium_args()]
        for attempt in (1, 2):
            try:
                if self._playwright is None:
                    self._playwright = await async_playwright().start()
                self._browser = await self._playwright.chromium.launch(**options)
                break
            except PlaywrightError as exc:
                # A dead driver fails every launch: start a fresh one once before giving up.
                with contextlib.suppress(Exception):
                    if self._playwright is not None:
                        await self._playwright.stop()
                self._playwright = None
                if attempt == 2:
                    raise ToolFailure(
                        f"Chromium at {options['executable_path']} failed to start ({first_line(exc)}); "
                        "check that it runs (chromium --headless --version) or set GAIA_CHROMIUM_PATH."
                    ) from None
        if self._reaper is None and not get_settings().gateway_sessions:
            self._reaper = asyncio.ensure_future(self._reap_idle())

    @property
    def guard(self) -> UrlGuard:
        if self._guard is None:
            configured = settings(PlaywrightSettings)
            self._guard = UrlGuard(configured.allow, configured.block, prefix="PLAYWRIGHT")
        return self._guard

    # -- sessions -------------------------------------------------------------------------------

    async def _session(self, session: Session) -> BrowserSession:
        browser = await self.browser()
        found = self.sessions.get(session.id)
        if found is not None:
            return found
        if self._create_lock is None:
            self._create_lock = asyncio.Lock()
        # Two first calls of one session at once must not open two contexts: create one at a time.
        async with self._create_lock:
            found = self.sessions.get(session.id)
            return found if found is not None else await self._create(browser, session)

    async def _create(self, browser: Browser, session: Session) -> BrowserSession:
        await self._make_room()
        configured = settings(PlaywrightSettings)
        context = await browser.new_context(
            accept_downloads=True,
            service_workers="block",
            viewport={"width": configured.width, "height": configured.height},
        )
        await route_through_cache(context)
        context.set_default_timeout(configured.action_timeout_s * 1000)
        context.set_default_navigation_timeout(configured.navigation_timeout_s * 1000)
        created = BrowserSession(session.id, context, session.paths, self.guard)
        if session.id in self._evicted:
            self._evicted.discard(session.id)
            created.notes.append(
                "This session's earlier browser context was closed (idle, the context limit, or a browser "
                "restart): tabs, cookies and history start afresh."
            )
        context.on("page", created.tab_of)
        self.sessions[session.id] = created
        return created

    async def _make_room(self) -> None:
        limit = max(1, settings(PlaywrightSettings).max_contexts)
        while len(self.sessions) >= limit:
            # The least recently used session, sparing one whose call is running.
            idle = [s for s in self.sessions.values() if not s.lock.locked()] or list(self.sessions.values())
            oldest = min(idle, key=lambda s: s.last_used)
            logger.warning("closing session %s's browser context: %d contexts open", oldest.id, limit)
            self._evicted.add(oldest.id)
            await self.close_session(oldest.id)

    async def close_session(self, session_id: str) -> int:
        """Close a session's context (its tabs, cookies, storage); how many tabs it had."""
        found = self.sessions.pop(session_id, None)
        if found is None:
            return 0
        tabs = len(found.tabs)
        for tab in found.tabs:
            if tab.pending is not None:
                tab.pending.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(found.context.close(), timeout=10)
        return tabs

    async def end_session(self, session_id: str) -> None:
        if self._loop is None:
            return
        self._evicted.discard(session_id)
        await self.call(lambda: self.close_session(session_id))

    async def _reap_idle(self) -> None:
        while True:
            await asyncio.sleep(min(30.0, max(1.0, settings(PlaywrightSettings).idle_s / 4)))
            await self.close_idle()

    async def close_idle(self) -> None:
        """Close the contexts of sessions idle past PLAYWRIGHT_IDLE_S (not one whose call is running)."""
        limit = settings(PlaywrightSettings).idle_s
        now = time.monotonic()
        for session in list(self.sessions.values()):
            if now - session.last_used > limit and not session.lock.locked():
                logger.info("closing idle session %s's browser context", session.id)
                self._evicted.add(session.id)
                await self.close_session(session.id)

    async def describe(self) -> str:
        browser = await self.browser()
        options = launch_options()
        mode = "headless" if options["headless"] else "headful (GAIA_BROWSER_HEADLESS=false)"
        return (
            f"Chromium {browser.version} at {options['executable_path']}, {mode}, is installed and running; "
            f"{len(self.sessions)} session context(s) open. Nothing to download."
        )


async def _coroutine(work: Callable[[], Awaitable[T]]) -> T:
    return await work()


host = BrowserHost()
