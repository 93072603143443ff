"""download_file over MCP against the loopback web: where files land, limits, types, failures."""

import json

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit.web import http as kit_http
from gaia_kit_testing import failed, ok
from gaia_kit_testing.fake_web import PDF, PNG, REFUSED_HOSTS

pytestmark = pytest.mark.anyio


def files_in(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


async def test_a_pdf_is_saved_in_the_workspace(fake_web, call, kit_env):
    answer = ok(
        await call("download_file", url=fake_web.url("/doc.pdf"), output_file_path="files/report.pdf")
    )
    saved = kit_env.workspace / "files" / "report.pdf"
    assert saved.read_bytes() == PDF
    assert "**Saved to:** files/report.pdf" in answer and "**Type:** application/pdf" in answer
    assert f"**Size:** {saved.stat().st_size:,} bytes" in answer and "Note:" not in answer
    assert files_in(kit_env.workspace) == ["files/report.pdf"]


async def test_a_folder_target_takes_the_name_from_the_url_after_redirects(fake_web, call, kit_env):
    answer = ok(
        await call("download_file", url=fake_web.url("/redirect?to=/blob.bin"), output_file_path="in/")
    )
    assert (kit_env.workspace / "in" / "blob.bin").read_bytes() == bytes(range(256)) * 8
    assert f"**Redirected to:** {fake_web.url('/blob.bin')}" in answer


async def test_the_sniffed_type_wins_and_a_mismatch_is_noted(fake_web, call, kit_env):
    answer = ok(await call("download_file", url=fake_web.url("/png-as-text.txt"), output_file_path="pic.txt"))
    assert "**Type:** image/png (server said text/plain)" in answer
    assert "The server called it text/plain, but the bytes are image/png." in answer
    assert "The name's extension suggests text/plain" in answer
    assert (kit_env.workspace / "pic.txt").read_bytes() == PNG


async def test_json_output(fake_web, call, kit_env):
    answer = ok(
        await call(
            "download_file", url=fake_web.url("/doc.pdf"), output_file_path="a.pdf", output_format="json"
        )
    )
    report = json.loads(answer)
    assert report["success"] and report["content_type"] == "application/pdf"
    assert report["saved_to"] == "a.pdf" and report["server_content_type"] == "application/pdf"


async def test_text_output_has_no_markdown(fake_web, call):
    answer = ok(
        await call(
            "download_file", url=fake_web.url("/blob.bin"), output_file_path="t.bin", output_format="text"
        )
    )
    assert answer.startswith("Download complete\n") and "Size: 2,048 bytes" in answer and "**" not in answer


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "../s2/stolen.bin"])
async def test_paths_outside_the_workspace_are_refused(fake_web, call, kit_env, path):
    assert "outside the allowed directories" in failed(
        await call("download_file", url=fake_web.url("/blob.bin"), output_file_path=path)
    )
    assert fake_web.requests == [] and files_in(kit_env.root.parent) == []


@pytest.mark.parametrize(
    ("path", "saved"),
    [
        ('odd <name>:"x"|y?*.bin', "odd _name___x__y__.bin"),
        ("sub/.hidden", "sub/hidden"),
        ("tab\tand\nnewline.bin", "tab_and_newline.bin"),
        ("x" * 240 + ".pdf", "x" * 196 + ".pdf"),
    ],
)
async def test_file_names_are_made_safe(fake_web, call, kit_env, path, saved):
    ok(await call("download_file", url=fake_web.url("/blob.bin"), output_file_path=path))
    assert files_in(kit_env.workspace) == [saved]


async def test_a_link_out_of_the_workspace_is_refused(fake_web, call, kit_env, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (kit_env.workspace / "link").symlink_to(outside)
    message = failed(
        await call("download_file", url=fake_web.url("/blob.bin"), output_file_path="link/x.bin")
    )
    assert "outside the allowed directories" in message and list(outside.iterdir()) == []


async def test_an_absolute_path_inside_the_workspace_is_fine(fake_web, call, kit_env):
    target = kit_env.workspace / "abs.bin"
    ok(await call("download_file", url=fake_web.url("/blob.bin"), output_file_path=str(target)))
    assert target.exists()


async def test_an_existing_file_is_kept_unless_overwrite(fake_web, call, kit_env):
    existing = kit_env.workspace / "keep.bin"
    existing.write_bytes(b"mine")
    message = failed(await call("download_file", url=fake_web.url("/blob.bin"), output_file_path="keep.bin"))
    assert "already exists; pass overwrite=true" in message and existing.read_bytes() == b"mine"
    assert fake_web.requests == []
    ok(
        await call(
            "download_file", url=fake_web.url("/blob.bin"), output_file_path="keep.bin", overwrite=True
        )
    )
    assert existing.read_bytes() == bytes(range(256)) * 8 and files_in(kit_env.workspace) == ["keep.bin"]


async def test_a_file_over_the_size_limit_leaves_nothing(fake_web, call, kit_env, monkeypatch):
    monkeypatch.setenv("DOWNLOAD_MAX_BYTES", "1000")
    message = failed(
        await call("download_file", url=fake_web.url("/bytes/5000"), output_file_path="big/b.bin")
    )
    assert "larger than 1,000 bytes (DOWNLOAD_MAX_BYTES); nothing was saved" in message
    assert files_in(kit_env.workspace) == []


async def test_a_download_past_the_workspace_quota_leaves_nothing(fake_web, call, kit_env, workspace_quota):
    workspace_quota(1)
    ok(await call("download_file", url=fake_web.url("/bytes/600000"), output_file_path="a.bin"))
    message = failed(await call("download_file", url=fake_web.url("/bytes/600000"), output_file_path="b.bin"))
    assert "left in the session workspace's quota (GAIA_WORKSPACE_MAX_MB); nothing was saved" in message
    assert "rm -r" in message and files_in(kit_env.workspace) == ["a.bin"]
    (kit_env.workspace / "a.bin").unlink()  # the session frees space, and the download goes through
    ok(await call("download_file", url=fake_web.url("/bytes/600000"), output_file_path="b.bin"))
    assert files_in(kit_env.workspace) == ["b.bin"]


async def test_the_timeout_is_honoured_and_leaves_nothing(fake_web, call, kit_env):
    message = failed(
        await call("download_file", url=fake_web.url("/slow"), output_file_path="slow.txt", timeout=1)
    )
    assert "did not finish answering within 1 s" in message
    assert files_in(kit_env.workspace) == []


async def test_a_404_is_one_sentence_and_leaves_nothing(fake_web, call, kit_env):
    message = failed(await call("download_file", url=fake_web.url("/gone.zip"), output_file_path="gone.zip"))
    assert "answered HTTP 404 (Not Found)" in message and files_in(kit_env.workspace) == []


async def test_a_rate_limit_is_waited_out(fake_web, call, kit_env):
    fake_web.throttle(2)
    ok(await call("download_file", url=fake_web.url("/blob.bin"), output_file_path="b.bin"))
    assert len(fake_web.requests) == 3


@pytest.mark.parametrize("host", REFUSED_HOSTS)
async def test_private_and_metadata_addresses_are_refused(fake_web, call, kit_env, host):
    message = failed(await call("download_file", url=f"http://{host}/secret", output_file_path="s.bin"))
    assert "GAIA_HTTP_ALLOW" in message and files_in(kit_env.workspace) == []


async def test_a_redirect_to_a_private_address_is_refused(fake_web, call, kit_env):
    url = fake_web.url("/redirect?to=http://169.254.169.254/latest/meta-data/")
    assert "169.254.169.254" in failed(await call("download_file", url=url, output_file_path="m.txt"))
    assert files_in(kit_env.workspace) == []


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_loopback_is_refused_unless_allow_listed(fake_web, call, monkeypatch, host):
    monkeypatch.delenv("GAIA_HTTP_ALLOW")
    forget_settings()
    kit_http.forget_shared_http()
    url = f"http://{host}:{fake_web.port}/blob.bin"
    assert "loopback" in failed(await call("download_file", url=url, output_file_path="b.bin"))


async def test_recorded_downloads_replay_identically_with_the_site_gone(fake_web, call, kit_env, monkeypatch):
    urls = [fake_web.url("/doc.pdf"), fake_web.url("/redirect?to=/blob.bin"), fake_web.url("/missing")]
    recorded = [
        await call("download_file", url=url, output_file_path=f"one/{n}") for n, url in enumerate(urls)
    ]
    fake_web.stop()
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "replay")
    forget_settings()
    kit_http.forget_shared_http()
    replayed = [
        await call("download_file", url=url, output_file_path=f"two/{n}") for n, url in enumerate(urls)
    ]
    assert [(r.is_error, r.content[0].text.replace("two/", "one/")) for r in replayed] == [
        (r.is_error, r.content[0].text) for r in recorded
    ]
    assert [(kit_env.workspace / "two" / str(n)).read_bytes() for n in (0, 1)] == [
        (kit_env.workspace / "one" / str(n)).read_bytes() for n in (0, 1)
    ]


async def test_capabilities_name_the_limits(call, monkeypatch):
    monkeypatch.setenv("DOWNLOAD_MAX_BYTES", "12345")
    info = json.loads(ok(await call("get_download_capabilities")))
    assert info["max_file_bytes"] == 12345 and info["protocols"] == ["http", "https"]
