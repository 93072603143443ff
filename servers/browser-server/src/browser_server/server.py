"""browser-server: the browser-use agent (PyPI `browser-use`) driving the system Chromium with an
OpenAI-compatible model (BROWSERUSE_LLM_*, each falling back to MCP_LLM_*).

Each session keeps its own browser profile (cookies, storage, logins) for its lifetime, in a temp
directory removed when the gateway ends the session; downloads land in the session workspace
(downloads/), within its disk quota.
Chromium reaches the web only through the kit's guarding proxy (gaia_kit.web.proxy), one per run: the
SSRF rules and GAIA_HTTP_ALLOW decide every connection it opens, loopback included. Under
GAIA_HTTP_CACHE_MODE=replay (or read-write with BROWSERUSE_HTTP_CACHE=true) it has no way out at all:
its requests are answered through the kit's record/replay HTTP cache (replay.py), which applies the
same rules to what it fetches.
The server runs from its own locked environment (servers/browser-server/.venv): browser-use pins
exact versions of many packages.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import psutil
from gaia_kit import KitServer, Session, ToolFailure, serve, session_of, stdout_to_stderr
from gaia_kit.core.calls import current_call
from gaia_kit.core.hints import hints
from gaia_kit.core.paths import free_path
from gaia_kit.core.quota import place, scratch
from gaia_kit.core.quota_accounting import QuotaExceeded
from gaia_kit.core.settings import settings
from gaia_kit.core.usage import charge, check_budget
from gaia_kit.models.llm import LLMConfig, configured, llm_status, model_backend, model_line
from gaia_kit.web.browser_cache import through_cache
from gaia_kit.web.chromium import chromium_args, chromium_path, headless
from gaia_kit.web.guard import UrlGuard
from gaia_kit.web.proxy import GuardProxy
from mcp.server.mcpserver import Context
from pydantic import Field, PositiveFloat, PositiveInt, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from .replay import NO_NETWORK_ARGS, CachedPages

PREFIX = "BROWSERUSE"

# browser-use reads these when imported: no telemetry, no cloud sync or hints, no PyPI version
# check, no extension downloads, and no logging setup of its own (stdout carries the protocol).
os.environ.update(
    {
        "ANONYMIZED_TELEMETRY": "false",
        "BROWSER_USE_CLOUD_SYNC": "false",
        "BROWSER_USE_VERSION_CHECK": "false",
        "BROWSER_USE_CLOUD_HINTS": "false",
        "BROWSER_USE_DISABLE_EXTENSIONS": "true",
        "BROWSER_USE_SETUP_LOGGING": "false",
    }
)

# Profiles and browser-use's own config live in one temp directory per server process.
_ROOT = Path(tempfile.mkdtemp(prefix="browser-server-"))
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)
os.environ["BROWSER_USE_CONFIG_DIR"] = str(_ROOT / "config")

server = KitServer(
    "browser-server",
    web_facing=True,
    instructions=(
        "browser_use hands a task in plain words to a browser agent (browser-use on Chromium) that "
        "navigates, clicks, types and reads pages until it can answer; it returns the answer, the steps "
        "taken and the URLs visited. get_browser_capabilities says what is configured."
    ),
)


class Limits(BaseSettings):
    """BROWSERUSE_TASK_TIMEOUT, _MAX_STEPS, _MAX_BROWSERS, _USE_VISION, _HTTP_CACHE."""

    model_config = SettingsConfigDict(env_prefix="BROWSERUSE_", extra="ignore")

    task_timeout: PositiveFloat = 540.0
    """Seconds for one browser_use call; the agent is stopped there."""
    max_steps: PositiveInt = 100
    """Ceiling on the max_steps argument."""
    max_browsers: PositiveInt = 4
    """Chromium instances one server process runs at once; further calls wait."""
    use_vision: bool = True
    """Send screenshots to the model (false for text-only models)."""
    http_cache: bool = False
    """Send the browser's requests through the kit's record/replay HTTP cache under
    GAIA_HTTP_CACHE_MODE=read-write; under replay they always are, so a replay run never reaches the web."""


def limits() -> Limits:
    try:
        return settings(Limits)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = f"BROWSERUSE_{str(error['loc'][0]).upper()}"
        raise ToolFailure(
            f"{name} is set to {error.get('input')!r}, which is not valid: {error['msg']}."
        ) from None


@server.tool(
    annotations=hints("Browser agent", read_only=False, destructive=True, idempotent=False, open_world=True)
)
async def browser_use(
    task: Annotated[str, Field(description="The task to perform using the browser automation agent")],
    ctx: Context,
    max_steps: Annotated[int, Field(description="Maximum number of steps for browser execution")] = 50,
    extract_format: Annotated[
        Literal["markdown", "json", "text"],
        Field(description="Format for extracted content: 'markdown', 'json', or 'text'"),
    ] = "markdown",
) -> str:
    """
    Perform browser automation tasks using the browser-use package.

    A browser agent (browser-use on Chromium, driven by the configured model) works on the task
    step by step: navigating, clicking, typing, scrolling, reading pages. Returns its final answer,
    the steps it took and the URLs it visited. The browser keeps cookies and logins for the rest of
    the session; downloads are saved in the session workspace under downloads/.
    """
    if not task.strip():
        raise ToolFailure("The task is empty; describe what the browser agent should do.")
    config = configured(PREFIX)
    check_budget(model_backend(PREFIX))
    bounds = limits()
    steps = max(1, min(max_steps, bounds.max_steps))
    session = session_of(ctx)
    # One run at a time per session (one Chromium per profile), a bounded number per process.
    async with _session_lock(session.id), _browsers(bounds.max_browsers):
        report = await _run_agent(task, steps, config, session, bounds)
    return _render(report, extract_format)


@server.tool(annotations=hints("Browser agent capabilities", read_only=True, open_world=False))
async def get_browser_capabilities() -> str:
    """
    Get information about browser automation capabilities and configuration.
    """
    bounds = limits()
    try:
        browser = f"Browser: {chromium_path()} ({'headless' if headless() else 'headful, on ' + os.environ.get('DISPLAY', 'no DISPLAY')})."
    except ToolFailure as exc:
        browser = f"Browser: none. {exc}"
    return "\n".join(
        [
            "browser_use runs the browser-use agent: navigate, click, type, scroll, read and extract page "
            "content, switch tabs, download files, until it can answer the task.",
            model_line(PREFIX),
            browser,
            f"Vision (screenshots sent to the model): {'on' if bounds.use_vision else 'off'} (BROWSERUSE_USE_VISION).",
            f"Limits: at most {bounds.max_steps} steps (BROWSERUSE_MAX_STEPS), {bounds.task_timeout:.0f} s per task "
            f"(BROWSERUSE_TASK_TIMEOUT), {bounds.max_browsers} browsers at once (BROWSERUSE_MAX_BROWSERS).",
            "Each session has its own browser profile (cookies, logins), kept until the session ends; "
            "downloads go to the session workspace under downloads/.",
            "Output formats: markdown, json, text.",
            _cache_line(bounds),
        ]
    )


def _cache_line(bounds: Limits) -> str:
    if not through_cache(bounds.http_cache):
        return "HTTP cache: not used by the browser (BROWSERUSE_HTTP_CACHE, GAIA_HTTP_CACHE_MODE)."
    return "HTTP cache: every request the browser makes is recorded and replayed (GAIA_HTTP_CACHE_MODE)."


@server.on_session_end
def release_profile(session_id: str) -> None:
    shutil.rmtree(_profile_dir(session_id), ignore_errors=True)
    _locks.pop(session_id, None)


@dataclass
class Report:
    task: str
    result: str | None
    done: bool
    success: bool | None
    steps: list[str]
    urls: list[str]
    errors: list[str]
    note: str | None = None
    downloads: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """Why the browser's requests were refused (a page never recorded, in replay)."""


async def _run_agent(task: str, steps: int, config: LLMConfig, session: Session, bounds: Limits) -> Report:
    from browser_use import Agent, BrowserSession

    profile = _profile_dir(session.id)
    user_data_dir = profile / "chromium"
    profile.mkdir(parents=True, exist_ok=True)
    note = None
    cached = through_cache(bounds.http_cache)
    # Chromium writes downloads itself, so they land outside the workspace first and enter it
    # afterwards within the session's disk quota.
    with scratch(session.workspace, prefix=".browser-downloads-") as landing:
        # Chromium's way out: the guarding proxy (it reads GAIA_HTTP_ALLOW), as long as this run's
        # Chromium lives; none under the cache, whose interception answers every request.
        proxy = None if cached else GuardProxy(UrlGuard())
        try:
            if proxy is not None:
                await proxy.start()
            browser = BrowserSession(
                executable_path=chromium_path(),
                headless=headless(),
                args=[*chromium_args(), *(NO_NETWORK_ARGS if proxy is None else proxy.chromium_args())],
                chromium_sandbox=False,  # chromium_args() decides: --no-sandbox only as root
                user_data_dir=str(user_data_dir),
                # Chromium keeps cookies in memory for up to 30 s and a stopped browser may not write them;
                # browser-use saves cookies and storage here when it stops and loads them when it starts.
                storage_state=str(profile / "storage_state.json"),
                downloads_path=str(landing),
                enable_default_extensions=False,
                keep_alive=False,
            )
            agent = Agent(
                task=task,
                llm=_chat_model(config),
                browser_session=browser,
                use_vision=bounds.use_vision,
                use_judge=False,  # a second model call per task, for browser-use's own evaluations
                calculate_cost=False,  # would fetch a price list from the internet
                generate_gif=False,
                file_system_path=str(profile / "agent-files"),
                llm_timeout=int(config.timeout_s),
            )
        except BaseException:
            if proxy is not None:
                await proxy.close()
            raise
        call = current_call()

        async def step_done(agent: Any) -> None:
            taken = len(agent.history.history)
            call.progress(taken, steps, f"step {taken} of at most {steps}")

        pages = CachedPages(browser) if cached else None

        async def run() -> None:
            if pages is not None:
                try:
                    await browser.start()  # the agent's own start() then finds it running
                except TimeoutError:  # browser-use's own limit, not BROWSERUSE_TASK_TIMEOUT
                    raise ToolFailure(
                        "Chromium did not start in time; the machine may be overloaded, try again."
                    ) from None
                await pages.start()
            await agent.run(max_steps=steps, on_step_end=step_done)

        with stdout_to_stderr():
            try:
                await asyncio.wait_for(run(), timeout=bounds.task_timeout)
            except TimeoutError:
                note = (
                    f"The browser agent stopped at its {bounds.task_timeout:.0f} s deadline "
                    "(BROWSERUSE_TASK_TIMEOUT); what it found so far is below."
                )
            finally:
                # Shielded: a cancelled call (the client cancelled or left) must still stop Chromium.
                with anyio.CancelScope(shield=True):
                    await _close(browser, user_data_dir)
                    if proxy is not None:
                        await proxy.close()
                downloads = await asyncio.to_thread(_keep_downloads, landing, session)
    # One model call per step taken (browser-use reports no token counts without its price list).
    charge(model_backend(PREFIX), calls=len(agent.history.history))
    if note is None and _model_never_answered(agent.history):
        first = next(e for e in agent.history.errors() if e)
        raise ToolFailure(
            f"The browser agent failed at every step (first error: {_short(first, 300)}); check that the "
            f"model {config.model} at {config.sources['BASE_URL']} answers and supports JSON-schema "
            "output (response_format json_schema)."
        )
    report = _report(task, agent.history, note, steps)
    report.downloads = downloads
    report.refused = pages.refusals if pages else []
    return report


def _keep_downloads(landing: Path, session: Session) -> list[str]:
    """Move finished downloads into the workspace's downloads/ folder; one line per file."""
    lines = []
    folder = session.paths.resolve("downloads", write=True)
    for path in sorted(landing.iterdir()):
        if not path.is_file() or path.suffix == ".crdownload":
            continue  # Chromium's partial file of a download that did not finish
        target = free_path(folder, path.name)
        try:
            place(path, target, replace=False)
            lines.append(f"{session.paths.display(target)} ({target.stat().st_size:,} bytes)")
        except QuotaExceeded as exc:
            lines.append(f"{path.name} was discarded: {exc}")
        except OSError as exc:
            lines.append(f"{path.name} could not be kept ({exc.strerror or exc}).")
    return lines


def _model_never_answered(history: Any) -> bool:
    """Every step the model was asked for failed (step 0 is browser-use opening the task's URL itself)."""
    asked = [h for h in history.history if not (h.metadata and h.metadata.step_number == 0)]
    return bool(asked) and not history.is_done() and all(any(r.error for r in h.result) for h in asked)


def _report(task: str, history: Any, note: str | None, max_steps: int) -> Report:
    steps = []
    for number, item in enumerate(history.history, start=1):
        actions = [
            a.model_dump(exclude_none=True, mode="json")
            for a in (item.model_output.action if item.model_output else [])
        ]
        goal = item.model_output.next_goal if item.model_output else None
        described = "; ".join(_action_text(a) for a in actions) or "no action"
        steps.append(
            f"{number}. {described}"
            + (f" (goal: {goal})" if goal else "")
            + (f" at {item.state.url}" if item.state.url else "")
        )
    urls = list(dict.fromkeys(u for u in history.urls() if u and u != "about:blank"))
    done = history.is_done()
    if note is None and not done:
        note = (
            f"The browser agent did not finish within {max_steps} steps; raise max_steps or narrow the task."
        )
    return Report(
        task=task,
        result=history.final_result() if done else None,
        done=done,
        success=history.is_successful(),
        steps=steps,
        urls=urls,
        errors=[e for e in history.errors() if e],
        note=note,
    )


def _action_text(action: dict[str, Any]) -> str:
    name, params = next(iter(action.items()))
    if not isinstance(params, dict) or not params:
        return name
    shown = ", ".join(f"{k}={_short(v)}" for k, v in params.items())
    return f"{name}({shown})"


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _render(report: Report, extract_format: str) -> str:
    if extract_format == "json":
        return json.dumps(report.__dict__, ensure_ascii=False, indent=2)
    result = report.result if report.result is not None else "(no final answer)"
    if extract_format == "text":
        parts = [result]
        if report.note:
            parts.append(report.note)
        if report.refused:
            parts.append("Refused to the browser:\n" + "\n".join(report.refused))
        parts.append("Steps:\n" + "\n".join(report.steps))
        parts.append("URLs visited:\n" + "\n".join(report.urls or ["(none)"]))
        if report.downloads:
            parts.append("Downloads:\n" + "\n".join(report.downloads))
        return "\n\n".join(parts)
    status = "done" if report.done else "not finished"
    if report.success is False:
        status += ", the agent reports it did not succeed"
    lines = [f"## Result ({status})", "", result]
    if report.note:
        lines += ["", f"> {report.note}"]
    if report.refused:
        lines += ["", "## Refused to the browser", "", *[f"- {reason}" for reason in report.refused]]
    lines += ["", f"## Steps ({len(report.steps)})", "", *report.steps]
    lines += ["", "## URLs visited", "", *([f"- {u}" for u in report.urls] or ["(none)"])]
    if report.downloads:
        lines += ["", "## Downloads", "", *[f"- {line}" for line in report.downloads]]
    if report.errors:
        lines += ["", "## Errors along the way", "", *[f"- {_short(e, 300)}" for e in report.errors]]
    return "\n".join(lines)


def _chat_model(config: LLMConfig) -> Any:
    from browser_use import ChatOpenAI

    base_url = re.sub(r"/chat/completions/?$", "", (config.base_url or "").rstrip("/"))
    return ChatOpenAI(
        model=config.model or "",
        base_url=base_url,
        # The OpenAI client insists on a key; keyless local endpoints (vLLM) ignore the header.
        api_key=config.api_key or "no-key",
        timeout=config.timeout_s,
        max_retries=2,
        max_completion_tokens=config.max_tokens or 4096,
    )


async def _close(browser: Any, user_data_dir: Path) -> None:
    """Stop Chromium even when the run was cancelled: a leaked browser costs hundreds of MiB."""
    try:
        await asyncio.wait_for(browser.kill(), timeout=30)
    except Exception:  # noqa: BLE001 - whatever browser-use left running is killed below
        pass
    flag = f"--user-data-dir={user_data_dir}"
    for process in psutil.Process().children(recursive=True):
        try:
            if flag in process.cmdline():
                process.kill()
        except psutil.Error:
            continue
    for name in ("SingletonLock", "SingletonSocket", "SingletonCookie"):
        (user_data_dir / name).unlink(missing_ok=True)


def _profile_dir(session_id: str) -> Path:
    # Readable, and the hash keeps ids that differ only in unusual characters apart.
    digest = hashlib.sha256(session_id.encode()).hexdigest()[:12]
    return _ROOT / "profiles" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', session_id)[:40]}-{digest}"


_locks: dict[str, asyncio.Lock] = {}
_semaphore: tuple[int, asyncio.Semaphore] | None = None


def _session_lock(session_id: str) -> asyncio.Lock:
    return _locks.setdefault(session_id, asyncio.Lock())


def _browsers(count: int) -> asyncio.Semaphore:
    global _semaphore
    if _semaphore is None or _semaphore[0] != count:
        _semaphore = (count, asyncio.Semaphore(count))
    return _semaphore[1]


def check() -> dict[str, Any]:
    report = llm_status(PREFIX)
    try:
        report["notes"].append(f"browser {chromium_path()}, {'headless' if headless() else 'headful'}")
    except ToolFailure as exc:
        report["missing"].append(str(exc))
    return report


def main() -> None:
    serve(server, check=check)
