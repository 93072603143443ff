"""Every ms-playwright tool on real Chromium, against the pages conftest serves on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import json
import re

import pytest
from gaia_kit.core.server import SessionEndedParams
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing import failed, ok, session_call
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from ms_playwright.browser import host
from ms_playwright.server import server

pytestmark = pytest.mark.anyio


def ref_of(snapshot: str, role_and_name: str) -> str:
    """The ref of the first snapshot line containing `role_and_name`, e.g. 'button "Send"'."""
    for line in snapshot.splitlines():
        if role_and_name in line:
            found = re.search(r"\[ref=([a-z0-9]+)\]", line)
            if found:
                return found.group(1)
    raise AssertionError(f"{role_and_name!r} not in the snapshot:\n{snapshot}")


async def test_reference_tools_are_served_compatibly():
    ours = {tool.name: tool.input_schema for tool in await server.list_tools()}
    reference = REFERENCE["ms-playwright"]
    assert {t["name"] for t in reference} == set(ours)
    assert not {
        t["name"]: p for t in reference if (p := compatibility_problems(t["inputSchema"], ours[t["name"]]))
    }


async def test_navigate_answers_with_url_title_and_a_snapshot_with_refs(browse, site):
    shown = ok(await browse("browser_navigate", url=site.url("/")))
    assert f"- Page URL: {site.url('/')}" in shown and "- Page Title: Home" in shown
    assert 'heading "Test home"' in shown and 'link "Form page" [ref=e' in shown
    again = ok(await browse("browser_snapshot"))
    assert ref_of(again, 'link "Form page"') == ref_of(shown, 'link "Form page"')


async def test_click_follows_a_link_and_back_returns(browse, site):
    shown = ok(await browse("browser_navigate", url=site.url("/")))
    after = ok(await browse("browser_click", element="Form page link", ref=ref_of(shown, 'link "Form page"')))
    assert "- Page Title: Form" in after and 'textbox "Name"' in after
    back = ok(await browse("browser_navigate_back"))
    assert f"Went back to {site.url('/')}" in back and "- Page Title: Home" in back
    assert "Went back to about:blank" in ok(await browse("browser_navigate_back"))  # where every tab starts
    assert "no previous page" in failed(await browse("browser_navigate_back"))


async def test_stale_and_unknown_refs_are_refused(browse, site):
    home = ok(await browse("browser_navigate", url=site.url("/")))
    link = ref_of(home, 'link "Dialogs page"')
    ok(await browse("browser_navigate", url=site.url("/hover")))
    message = failed(await browse("browser_click", element="old link", ref=link))
    assert message.endswith(f": Ref {link} not found in the current page snapshot. Capture a new snapshot.")
    assert "Ref e999 not found" in failed(await browse("browser_click", element="x", ref="e999"))
    assert "Ref css=a not found" in failed(await browse("browser_hover", element="x", ref="css=a"))


async def test_type_select_check_and_submit(browse, site):
    form = ok(await browse("browser_navigate", url=site.url("/form")))
    ok(await browse("browser_type", element="Name", ref=ref_of(form, 'textbox "Name"'), text="Ada"))
    ok(
        await browse(
            "browser_select_option", element="Colour", ref=ref_of(form, 'combobox "Colour"'), values=["g"]
        )
    )
    ok(await browse("browser_click", element="Agree", ref=ref_of(form, 'checkbox "Agree"')))
    sent = ok(await browse("browser_click", element="Send", ref=ref_of(form, 'button "Send"')))
    assert "sent Ada|g|true|-|2" in sent


async def test_type_slowly_fires_key_handlers_and_submit_presses_enter(browse, site):
    form = ok(await browse("browser_navigate", url=site.url("/form")))
    name = ref_of(form, 'textbox "Name"')
    ok(await browse("browser_type", element="Name", ref=name, text="Bo", slowly=True))
    assert '"o"' in ok(await browse("browser_evaluate", function="() => window.lastKey"))
    sent = ok(await browse("browser_type", element="Name", ref=name, text="Cy", submit=True))
    assert "sent Cy|r|false|-|2" in sent


async def test_fill_form_sets_every_kind_of_field(browse, site):
    form = ok(await browse("browser_navigate", url=site.url("/form")))
    fields = [
        {"name": "Name", "type": "textbox", "ref": ref_of(form, 'textbox "Name"'), "value": "Grace"},
        {"name": "Colour", "type": "combobox", "ref": ref_of(form, 'combobox "Colour"'), "value": "Blue"},
        {"name": "Agree", "type": "checkbox", "ref": ref_of(form, 'checkbox "Agree"'), "value": "true"},
        {"name": "Large", "type": "radio", "ref": ref_of(form, 'radio "Large"'), "value": "true"},
        {"name": "Volume", "type": "slider", "ref": ref_of(form, 'slider "Volume"'), "value": "7"},
    ]
    shown = ok(await browse("browser_fill_form", fields=fields))
    assert 'Filled Name = "Grace"' in shown
    sent = ok(await browse("browser_click", element="Send", ref=ref_of(shown, 'button "Send"')))
    assert "sent Grace|b|true|l|7" in sent


async def test_press_key_reaches_the_focused_element(browse, site):
    form = ok(await browse("browser_navigate", url=site.url("/form")))
    ok(await browse("browser_click", element="Name", ref=ref_of(form, 'textbox "Name"')))
    for key in ("Z", "ArrowLeft", "Y"):
        ok(await browse("browser_press_key", key=key))
    assert '"YZ"' in ok(
        await browse("browser_evaluate", function="() => document.getElementById('name').value")
    )
    assert "Pressing NoSuchKey failed" in failed(await browse("browser_press_key", key="NoSuchKey"))


async def test_file_upload_through_the_chooser(browse, site, kit_env):
    (kit_env.workspace / "notes.txt").write_text("hello")
    page = ok(await browse("browser_navigate", url=site.url("/upload")))
    assert "No file chooser is open" in failed(await browse("browser_file_upload", paths=["notes.txt"]))
    opened = ok(await browse("browser_click", element="Attachment", ref=ref_of(page, "Attachment")))
    assert "[File chooser]" in opened
    assert "is outside the allowed directories" in failed(
        await browse("browser_file_upload", paths=["/etc/passwd"])
    )
    uploaded = ok(await browse("browser_file_upload", paths=[str(kit_env.workspace / "notes.txt")]))
    assert "chosen notes.txt:5" in uploaded and "[File chooser]" not in uploaded
    assert "Uploaded notes.txt\n" in uploaded  # as the agent names it, never the host's path


async def test_alert_confirm_and_prompt_dialogs(browse, site):
    page = ok(await browse("browser_navigate", url=site.url("/dialogs")))
    alert = ok(await browse("browser_click", element="Alert", ref=ref_of(page, 'button "Alert"')))
    assert '"alert" dialog with message "Hello there"' in alert
    assert "dialog" in failed(await browse("browser_snapshot"))
    closed = ok(await browse("browser_handle_dialog", accept=True))
    assert "Accepted the alert dialog" in closed and "alert closed" in closed

    asked = ok(await browse("browser_click", element="Confirm", ref=ref_of(page, 'button "Confirm"')))
    assert '"confirm" dialog with message "Sure?"' in asked
    assert "declined" in ok(await browse("browser_handle_dialog", accept=False))

    ok(await browse("browser_click", element="Prompt", ref=ref_of(page, 'button "Prompt"')))
    assert "name: Lin" in ok(await browse("browser_handle_dialog", accept=True, promptText="Lin"))
    assert "No dialog is open" in failed(await browse("browser_handle_dialog", accept=True))


async def test_a_link_opening_a_new_tab_and_the_tabs_tool(browse, site):
    page = ok(await browse("browser_navigate", url=site.url("/popup-source")))
    opened = ok(await browse("browser_click", element="link", ref=ref_of(page, "Open form in new tab")))
    assert "### Open tabs" in opened and "- 1: [Form]" in opened
    listed = ok(await browse("browser_tabs", action="list"))
    assert "- 0: (current) [Popups]" in listed and site.url("/form") in listed
    selected = ok(await browse("browser_tabs", action="select", index=1))
    assert "- Page Title: Form" in selected and 'textbox "Name"' in selected
    assert "not one of the 2 open tabs" in failed(await browse("browser_tabs", action="select", index=5))
    new = ok(await browse("browser_tabs", action="new"))
    assert "Opened tab 2" in new and "about:blank" in new
    ok(await browse("browser_tabs", action="close"))
    closed = ok(await browse("browser_tabs", action="close", index=0))
    assert "Closed tab 0" in closed and "- Page Title: Form" in closed and "### Open tabs" not in closed


async def test_console_messages_and_network_requests(browse, site):
    page = ok(await browse("browser_navigate", url=site.url("/console")))
    assert "[log] page says hello" in page and "[warning] careful now" in page
    loaded = ok(await browse("browser_click", element="Load data", ref=ref_of(page, 'button "Load data"')))
    assert "value 42" in loaded and "[log] got 42" in loaded and "page says hello" not in loaded
    everything = ok(await browse("browser_console_messages"))
    assert "page says hello" in everything and "got 42" in everything
    requests = ok(await browse("browser_network_requests"))
    assert f"[GET] {site.url('/console')} => [200 OK]" in requests
    assert f"[GET] {site.url('/api/data?on=load')} => [200 OK]" in requests
    assert f"[GET] {site.url('/api/data')} => [200 OK]" in requests


async def test_drag_and_drop(browse, site):
    page = ok(await browse("browser_navigate", url=site.url("/drag")))
    dropped = ok(
        await browse(
            "browser_drag",
            startElement="card",
            startRef=ref_of(page, 'button "Draggable card"'),
            endElement="zone",
            endRef=ref_of(page, 'region "Drop zone"'),
        )
    )
    assert "Dropped card" in dropped


async def test_hover_opens_a_menu(browse, site):
    page = ok(await browse("browser_navigate", url=site.url("/hover")))
    assert "Secret item" not in page
    hovered = ok(await browse("browser_hover", element="Products", ref=ref_of(page, 'button "Products"')))
    assert 'link "Secret item"' in hovered


async def test_evaluate_on_the_page_and_on_an_element(browse, site):
    page = ok(await browse("browser_navigate", url=site.url("/form")))
    value = ok(await browse("browser_evaluate", function="() => ({sum: 1 + 2, title: document.title})"))
    assert json.loads(value.split("Result:\n")[1].split("\n\n###")[0]) == {"sum": 3, "title": "Form"}
    tag = ok(
        await browse(
            "browser_evaluate",
            function="(el) => el.tagName",
            element="Send",
            ref=ref_of(page, 'button "Send"'),
        )
    )
    assert '"BUTTON"' in tag
    assert "failed" in failed(await browse("browser_evaluate", function="() => { throw new Error('boom') }"))


async def test_wait_for_text_to_appear_and_disappear(browse, site):
    ok(await browse("browser_navigate", url=site.url("/wait")))
    gone = ok(await browse("browser_wait_for", textGone="Loading data"))
    assert 'Waited for "Loading data" to disappear' in gone
    shown = ok(await browse("browser_wait_for", text="All done"))
    assert "All done" in shown.split("### Page snapshot")[1]
    assert "in vain" in failed(await browse("browser_wait_for", text="Never shown"))
    assert "Waited for 0.1 s" in ok(await browse("browser_wait_for", time=0.1))
    assert "Pass time" in failed(await browse("browser_wait_for"))


async def test_resize_changes_the_viewport(browse, site):
    ok(await browse("browser_navigate", url=site.url("/")))
    ok(await browse("browser_resize", width=640, height=480))
    size = ok(await browse("browser_evaluate", function="() => [innerWidth, innerHeight]"))
    assert "640" in size and "480" in size
    assert "outside" in failed(await browse("browser_resize", width=5, height=5))


async def test_screenshot_is_an_image_and_a_file(browse, site, kit_env):
    ok(await browse("browser_navigate", url=site.url("/colour")))
    result = await browse("browser_take_screenshot", filename="shots/red.png")
    assert not result.is_error and "saved it to shots/red.png." in result.content[0].text
    saved = kit_env.workspace / "shots" / "red.png"
    image = next(block for block in result.content if block.type == "image")
    assert image.mime_type == "image/png" and base64.b64decode(image.data) == saved.read_bytes()
    assert saved.read_bytes()[:4] == b"\x89PNG"
    jpeg = await browse("browser_take_screenshot", type="jpeg", fullPage=True)
    assert next(b for b in jpeg.content if b.type == "image").mime_type == "image/jpeg"
    assert list(kit_env.workspace.glob("page-*.jpeg"))
    assert "is outside the allowed directories" in failed(
        await browse("browser_take_screenshot", filename="/etc/evil.png")
    )


async def test_download_lands_in_the_workspace(browse, site, kit_env):
    page = ok(await browse("browser_navigate", url=site.url("/download")))
    clicked = ok(await browse("browser_click", element="report", ref=ref_of(page, "Get the report")))
    target = kit_env.workspace / "downloads" / "report.csv"
    assert "to downloads/report.csv" in clicked  # workspace-relative, never the host's path
    assert target.read_text() == "a,b\n1,2\n"


async def test_screenshots_and_downloads_stop_at_the_workspace_quota(browse, site, kit_env, workspace_quota):
    workspace_quota(1)
    filler = kit_env.workspace / "filler.bin"
    filler.write_bytes(b"f" * (2**20 - 4))  # 4 bytes left
    ok(await browse("browser_navigate", url=site.url("/colour")))
    message = failed(await browse("browser_take_screenshot", filename="shots/red.png"))
    assert "past its quota" in message and "GAIA_WORKSPACE_MAX_MB" in message and "rm -r" in message
    page = ok(await browse("browser_navigate", url=site.url("/download")))
    clicked = ok(await browse("browser_click", element="report", ref=ref_of(page, "Get the report")))
    assert "discarded: Saving report.csv would take the session workspace past its quota" in clicked
    assert not (kit_env.workspace / "shots" / "red.png").exists()
    assert not (kit_env.workspace / "downloads" / "report.csv").exists()
    filler.unlink()  # the session frees space and goes on
    clicked = ok(await browse("browser_click", element="report", ref=ref_of(page, "Get the report")))
    assert (kit_env.workspace / "downloads" / "report.csv").read_text() == "a,b\n1,2\n"
    ok(await browse("browser_navigate", url=site.url("/colour")))
    assert not (await browse("browser_take_screenshot", filename="shots/red.png")).is_error


async def test_ssrf_refusals(browse, site):
    for url in ("http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "file:///etc/passwd"):
        message = failed(await browse("browser_navigate", url=url))
        assert "Refused to" in message, message
    redirected = failed(await browse("browser_navigate", url=site.url("/to-metadata")))
    assert "Refused to fetch from 169.254.169.254" in redirected
    page = ok(await browse("browser_navigate", url=site.url("/private-xhr")))
    assert "Refused to fetch from 10.0.0.1" in page and "[log] blocked" in page
    assert "[GET] http://10.0.0.1/secret => [failed: net::" in ok(await browse("browser_network_requests"))


async def test_websockets_pass_the_proxy_only_to_allowed_hosts(browse, site):
    ok(await browse("browser_navigate", url=site.url("/socket")))
    shown = ok(await browse("browser_wait_for", text="local:echo hi"))
    assert "private:refused" in shown and "private:echo" not in shown


async def test_a_page_that_never_finishes_loading_gets_a_bounded_answer(browse, site):
    shown = ok(await browse("browser_navigate", url=site.url("/never")))
    assert "did not finish loading within 3 s" in shown and "Partial content arrived" in shown


async def test_huge_snapshots_are_capped_and_paged(browse, site, monkeypatch):
    shown = ok(await browse("browser_navigate", url=site.url("/big")))
    assert "[Snapshot truncated at 20000 of" in shown and "start_index=20000" in shown
    rest = ok(await browse("browser_snapshot", start_index=20000))
    assert rest.count("Paragraph number") > 100 and "Paragraph number 0 " not in rest


async def test_install_reports_the_browser_and_close_ends_the_context(browse, site):
    assert "Chromium" in ok(await browse("browser_install")) and "Nothing to download" in ok(
        await browse("browser_install")
    )
    ok(await browse("browser_navigate", url=site.url("/set-cookie?v=kept")))
    assert "Closed the browser (1 tab(s))" in ok(await browse("browser_close"))
    assert "cookie is none" in ok(await browse("browser_navigate", url=site.url("/whoami")))


async def test_two_sessions_keep_their_own_cookies_and_tabs(site, kit_env):
    second = kit_env.root / "s2"
    second.mkdir()
    async with (
        session_call(server, kit_env.workspace, "alice") as alice,
        session_call(server, second, "bob") as bob,
    ):
        await asyncio.gather(
            alice("browser_navigate", url=site.url("/set-cookie?v=alice")),
            bob("browser_navigate", url=site.url("/set-cookie?v=bob")),
        )
        seen = await asyncio.gather(
            alice("browser_navigate", url=site.url("/whoami")),
            bob("browser_navigate", url=site.url("/whoami")),
        )
        assert "cookie is alice" in ok(seen[0]) and "cookie is bob" in ok(seen[1])
        ok(await alice("browser_tabs", action="new"))
        assert "- 1: (current) []" in ok(await alice("browser_tabs", action="list"))
        bobs = ok(await bob("browser_tabs", action="list"))
        assert "- 0: (current) [Who]" in bobs and "- 1:" not in bobs
    # The gateway's session_ended notification closes each context.
    for session_id in ("alice", "bob"):
        await server._session_ended(None, SessionEndedParams(session_id=session_id))
    assert "alice" not in host.sessions and "bob" not in host.sessions


async def test_past_the_context_limit_the_least_recent_session_starts_afresh(site, kit_env, monkeypatch):
    monkeypatch.setenv("PLAYWRIGHT_MAX_CONTEXTS", "1")
    forget_settings()
    try:
        async with session_call(server, kit_env.workspace, "first") as first:
            ok(await first("browser_navigate", url=site.url("/set-cookie?v=first")))
            async with session_call(server, kit_env.workspace, "second") as second:
                ok(await second("browser_navigate", url=site.url("/")))
            assert "first" not in host.sessions
            again = ok(await first("browser_navigate", url=site.url("/whoami")))
            assert "earlier browser context was closed" in again and "cookie is none" in again
    finally:
        for session_id in ("first", "second"):
            await host.end_session(session_id)
        monkeypatch.delenv("PLAYWRIGHT_MAX_CONTEXTS")
        forget_settings()


async def test_an_idle_session_is_closed_and_told_so_on_its_next_call(site, kit_env, monkeypatch):
    async with session_call(server, kit_env.workspace, "sleepy") as sleepy:
        ok(await sleepy("browser_navigate", url=site.url("/set-cookie?v=sleepy")))
        monkeypatch.setenv("PLAYWRIGHT_IDLE_S", "0.2")
        forget_settings()
        try:
            await asyncio.sleep(0.5)
            await host.call(host.close_idle)  # one pass of the reaper, which runs every idle_s / 4
            assert "sleepy" not in host.sessions
            again = ok(await sleepy("browser_navigate", url=site.url("/whoami")))
            assert "earlier browser context was closed" in again and "cookie is none" in again
        finally:
            monkeypatch.delenv("PLAYWRIGHT_IDLE_S")
            forget_settings()
            await host.end_session("sleepy")


async def test_a_crashed_browser_is_relaunched(browse, site):
    ok(await browse("browser_navigate", url=site.url("/")))

    async def crash() -> None:
        await host._browser.close()  # as the tests see it, a vanished browser process

    await host.call(crash)
    shown = ok(await browse("browser_navigate", url=site.url("/form")))
    assert "browser restart" in shown and "- Page Title: Form" in shown


async def test_an_action_the_element_refuses_says_what_failed(browse, site):
    page = ok(await browse("browser_navigate", url=site.url("/form")))
    message = failed(
        await browse("browser_type", element="Send button", ref=ref_of(page, 'button "Send"'), text="x")
    )
    assert "Typing into Send button failed" in message
    message = failed(
        await browse(
            "browser_select_option", element="Name", ref=ref_of(page, 'textbox "Name"'), values=["a"]
        )
    )
    assert "Selecting in Name failed" in message


async def test_a_download_over_the_cap_is_discarded(browse, site, kit_env, monkeypatch):
    monkeypatch.setenv("PLAYWRIGHT_MAX_DOWNLOAD_BYTES", "4")
    forget_settings()
    try:
        page = ok(await browse("browser_navigate", url=site.url("/download")))
        clicked = ok(await browse("browser_click", element="report", ref=ref_of(page, "Get the report")))
        assert "discarded: 8 bytes is over PLAYWRIGHT_MAX_DOWNLOAD_BYTES (4)" in clicked
        assert not (kit_env.workspace / "downloads" / "report.csv").exists()
    finally:
        monkeypatch.delenv("PLAYWRIGHT_MAX_DOWNLOAD_BYTES")
        forget_settings()


async def test_simultaneous_first_calls_of_a_session_share_one_context(browse, site):
    shown = await asyncio.gather(*(browse("browser_tabs", action="new") for _ in range(3)))
    assert all(not result.is_error for result in shown)
    assert "- 2:" in ok(await browse("browser_tabs", action="list"))


async def test_navigations_wait_for_a_rendering_slot_and_past_the_queue_are_busy(site, kit_env, monkeypatch):
    from mcp.shared.exceptions import MCPError

    monkeypatch.setenv("PLAYWRIGHT_MAX_NAVIGATIONS", "1")
    monkeypatch.setenv("PLAYWRIGHT_NAVIGATION_QUEUE_S", "0.1")
    forget_settings()
    host.render._semaphore, host.render.hold_s = None, 1.0
    slow_ws, fast_ws = kit_env.root / "slow", kit_env.root / "fast"
    slow_ws.mkdir(), fast_ws.mkdir()
    try:
        async with (
            session_call(server, slow_ws, "slow-page") as slow,
            session_call(server, fast_ws, "fast-page") as fast,
        ):
            ok(await fast("browser_navigate", url=site.url("/")))  # both contexts exist before the race
            ok(await slow("browser_navigate", url=site.url("/")))
            loading = asyncio.ensure_future(slow("browser_navigate", url=site.url("/never")))
            while not host.render.loading:
                await asyncio.sleep(0.01)
            with pytest.raises(MCPError) as refused:  # the one slot is taken and 1 s > the 0.1 s queue
                await fast("browser_navigate", url=site.url("/form"))
            assert refused.value.error.data == {"retryAfter": 1}
            assert "rendering slots" in refused.value.error.message
            # The slow page frees its slot after HOLD_S: the other session's page loads long before it ends.
            host.render.hold_s = 0.05
            shown = ok(await fast("browser_navigate", url=site.url("/form")))
            assert "- Page Title: Form" in shown and not loading.done()
            assert "did not finish loading within 3 s" in ok(await loading)
    finally:
        for session_id in ("slow-page", "fast-page"):
            await host.end_session(session_id)
        forget_settings()
        host.render._semaphore, host.render.hold_s = None, 0.5
