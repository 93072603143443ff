"""wayback-server over MCP against the loopback Wayback Machine (conftest)."""

import json

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit.web import http as kit_http
from gaia_kit_testing import failed, ok

pytestmark = pytest.mark.anyio


async def test_versions_are_listed_oldest_first_with_duplicates_collapsed(wayback, call):
    answer = ok(await call("list_archived_versions", url="example.com"))
    assert answer.startswith("# Archived versions of example.com (3 shown)")
    stamps = [line.split("**")[1] for line in answer.splitlines() if line.startswith("- **")]
    assert stamps == ["20050101120000", "20130919044612", "20200315000000"]
    assert f"{wayback.url('/web')}/20130919044612/http://www.example.com/" in answer
    path, query = wayback.requests[-1]
    assert path == "/cdx/search/cdx" and query["collapse"] == "digest" and query["output"] == "json"


async def test_dates_filter_and_a_limit_says_how_to_go_on(wayback, call):
    answer = ok(await call("list_archived_versions", url="http://example.com/", limit=1, from_date="2013"))
    assert "20130919044612" in answer and "2005" not in answer.split("\n", 1)[1]
    assert "call again with from_date=20130919044612" in answer
    dated = json.loads(
        ok(
            await call(
                "list_archived_versions", url="example.com", to_date="2010-12-31", output_format="json"
            )
        )
    )
    assert [v["timestamp"] for v in dated["versions"]] == ["20050101120000"]
    assert dated["versions"][0]["date"] == "2005-01-01T12:00:00+00:00" and dated["notes"] == []


async def test_limit_zero_means_all_up_to_the_cap(wayback, call, monkeypatch):
    monkeypatch.setenv("WAYBACK_MAX_VERSIONS", "2")
    answer = ok(await call("list_archived_versions", url="example.com", limit=0))
    assert "(2 shown)" in answer and "at most 2 per call, WAYBACK_MAX_VERSIONS" in answer


async def test_no_capture_and_bad_dates_are_one_sentence(wayback, call):
    assert "has no capture of nowhere.example" in failed(
        await call("list_archived_versions", url="nowhere.example")
    )
    assert "is not a date" in failed(
        await call("list_archived_versions", url="example.com", from_date="last year")
    )
    assert "is not a date" in failed(await call("get_archived_content", url="example.com", timestamp="soon"))


async def test_content_is_the_nearest_capture_as_markdown_without_toolbar(wayback, call):
    answer = ok(await call("get_archived_content", url="example.com", timestamp="20140101"))
    assert answer.startswith("# Example 2013")
    assert "**Snapshot:** 20130919044612 (2013-09-19T04:46:12+00:00)" in answer
    assert "**Requested:** 20140101 (the nearest capture is shown)" in answer
    assert "Twenty thirteen edition." in answer and "<p>" not in answer
    assert any(path == "/web/20130919044612id_/http://www.example.com/" for path, _ in wayback.requests)


async def test_raw_html_and_truncation(wayback, call, monkeypatch):
    raw = ok(await call("get_archived_content", url="example.com", timestamp="2020", extract_text_only=False))
    assert "<p>The pandemic-era version.</p>" in raw and "**Snapshot:** 20200315000000" in raw
    monkeypatch.setenv("WAYBACK_TRUNCATE_CHARS", "20")
    forget_settings()
    cut = ok(await call("get_archived_content", url="example.com", timestamp="2020", truncate_content=True))
    assert "[Output truncated at 20 of" in cut and "truncate_content=false" in cut


async def test_a_wrong_endpoint_names_the_setting(wayback, call, monkeypatch):
    monkeypatch.setenv("WAYBACK_AVAILABILITY_URL", wayback.url("/wayback/available-gone"))
    message = failed(await call("get_archived_content", url="example.com", timestamp="2006"))
    assert "answered 404; check WAYBACK_AVAILABILITY_URL" in message


@pytest.mark.parametrize("trouble", ["forgetful", "available_down"])
async def test_the_snapshot_time_comes_from_waybacks_redirect(wayback, call, monkeypatch, trouble):
    # The availability API sometimes finds nothing, or fails; the id_ form then redirects to a capture.
    monkeypatch.setenv("GAIA_HTTP_RETRIES", "0")
    setattr(wayback, trouble, True)
    answer = json.loads(
        ok(
            await call(
                "get_archived_content", url="https://example.com/", timestamp="2006", output_format="json"
            )
        )
    )
    assert answer["snapshot_timestamp"] == "20050601120000" and answer["requested_timestamp"] == "2006"
    assert answer["original"] == "http://example.com/" and "illustrative examples" in answer["content"]
    assert [path for path, _ in wayback.requests[-2:]] == [
        "/web/2006id_/https://example.com/",
        "/web/20050601120000id_/http://example.com/",
    ]


async def test_a_pdf_capture_gives_its_text_and_a_binary_one_is_explained(wayback, call):
    answer = ok(await call("get_archived_content", url="example.com/report.pdf", timestamp="2016"))
    assert "**Content type:** application/pdf" in answer and "Revenue grew 12 percent" in answer
    message = failed(
        await call(
            "get_archived_content", url="example.com/logo.png", timestamp="2016", extract_text_only=False
        )
    )
    assert "is binary (image/png)" in message


async def test_an_unarchived_url_says_what_to_do(wayback, call):
    message = failed(await call("get_archived_content", url="nowhere.example", timestamp="2020"))
    assert "no capture of nowhere.example near 2020" in message and "list_archived_versions" in message


async def test_a_rate_limit_is_waited_out(wayback, call):
    wayback.throttle(2)
    assert "(3 shown)" in ok(await call("list_archived_versions", url="example.com"))
    assert len(wayback.requests) == 3


async def test_recorded_answers_replay_identically_with_the_archive_gone(wayback, call, monkeypatch):
    calls = [
        ("list_archived_versions", {"url": "example.com"}),
        ("get_archived_content", {"url": "example.com", "timestamp": "20140101"}),
        ("get_archived_content", {"url": "example.com/report.pdf", "timestamp": "2016"}),
        ("get_archived_content", {"url": "nowhere.example", "timestamp": "2020"}),
    ]
    recorded = [await call(name, **args) for name, args in calls]
    wayback.stop()
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "replay")
    forget_settings()
    kit_http.forget_shared_http()
    replayed = [await call(name, **args) for name, args in calls]
    assert [(r.is_error, r.content) for r in replayed] == [(r.is_error, r.content) for r in recorded]


@pytest.mark.parametrize("setting", ["WAYBACK_CDX_URL", "WAYBACK_SNAPSHOT_URL"])
async def test_the_guard_covers_the_configured_endpoints(wayback, call, monkeypatch, setting):
    monkeypatch.setenv(setting, "http://169.254.169.254/latest")
    if setting == "WAYBACK_CDX_URL":
        message = failed(await call("list_archived_versions", url="example.com"))
    else:
        message = failed(await call("get_archived_content", url="example.com", timestamp="2020"))
    assert "169.254.169.254" in message and "GAIA_HTTP_ALLOW" in message


async def test_capabilities(wayback, call):
    info = json.loads(ok(await call("get_wayback_capabilities")))
    assert "id_" in info["apis"]["content"] and info["max_versions_per_call"] == 1000
