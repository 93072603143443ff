"""The gaia-env command line: tools, call, doctor, and the registry errors it reports."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from gaia_kit_testing.gateway import RunningGateway
from gaia_kit_testing.probe import PROBE_REGISTRY, write_registry


def gaia_env(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    common = ["--workspace-root", str(tmp / "ws"), "--dataset-dir", str(tmp / "data")]
    argv = [sys.executable, "-m", "gaia_env", args[0], *common, *args[1:]]
    env = {
        k: v for k, v in os.environ.items() if "_LLM_" not in k
    }  # a model configured here would hide the warning
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)


def test_tools_table_and_json(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "probe.toml", PROBE_REGISTRY)
    table = gaia_env("tools", "--config", str(registry), tmp=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "probe-a__echo" in table.stdout and "tools" in table.stdout.splitlines()[-1]
    listing = json.loads(
        gaia_env(
            "tools", "--config", str(registry), "--servers", "probe-a", "--format", "json", tmp=tmp_path
        ).stdout
    )
    assert {t["name"] for t in listing} >= {"echo", "whoami", "list_supported_formats"}


def test_call_prints_the_result_and_sets_the_exit_code(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "probe.toml", PROBE_REGISTRY)
    ok = gaia_env(
        "call", "--config", str(registry), "--servers", "probe-a", "echo", '{"text": "hello"}', tmp=tmp_path
    )
    assert ok.returncode == 0 and ok.stdout.strip() == "hello"
    failed = gaia_env(
        "call",
        "--config",
        str(registry),
        "--servers",
        "probe-a",
        "peek",
        '{"name": "nope.txt"}',
        tmp=tmp_path,
    )
    assert failed.returncode == 1 and "nope.txt" in failed.stdout
    bad_json = gaia_env("call", "--config", str(registry), "echo", "{oops", tmp=tmp_path)
    assert bad_json.returncode == 2 and "JSON object" in bad_json.stderr
    unknown = gaia_env("call", "--config", str(registry), "no_such_tool", "{}", tmp=tmp_path)
    assert unknown.returncode == 2 and "Unknown tool" in unknown.stderr


def test_call_against_a_running_gateway(probe_gateway: RunningGateway, tmp_path: Path) -> None:
    out = gaia_env(
        "call",
        "--url",
        probe_gateway.url,
        "--session",
        "cli",
        "probe-a__echo",
        '{"text": "remote"}',
        tmp=tmp_path,
    )
    assert out.returncode == 0 and out.stdout.strip() == "remote"


def test_doctor_reports_each_server(tmp_path: Path) -> None:
    registry = write_registry(
        tmp_path / "mixed.toml",
        """
        [servers.probe-a]
        command = ["{python}", "{probe}"]
        [servers.broken]
        command = ["/nonexistent/binary"]
        [servers.think]
        command = ["{python}", "-m", "intelligence_think_server"]
    """,
    )
    out = gaia_env("doctor", "--config", str(registry), tmp=tmp_path)
    assert out.returncode == 1
    assert re.search(r"ok   probe-a: starts, \d+ tools", out.stdout)  # the probe's count grows with its tests
    assert "FAIL broken: does not start" in out.stdout and "/nonexistent/binary" in out.stdout
    # Starts, but its model tools need settings: a warning that names them, not a failure.
    assert "warn think: starts, 2 tools" in out.stdout and "missing: THINK_LLM_BASE_URL" in out.stdout


def test_a_server_whose_own_environment_is_missing_says_to_run_make_sync(tmp_path: Path) -> None:
    registry = write_registry(
        tmp_path / "own-env.toml",
        """
        [servers.own-env]
        command = ["{root}/servers/no-such-server/.venv/bin/python", "-m", "no_such_server"]
    """,
    )
    out = gaia_env("doctor", "--config", str(registry), tmp=tmp_path)
    assert out.returncode == 1
    assert "FAIL own-env: does not start" in out.stdout
    assert "servers/no-such-server/.venv/bin/python does not exist: run `make sync`" in out.stdout


def test_unknown_server_and_bad_registry_are_clear(tmp_path: Path) -> None:
    out = gaia_env("tools", "--servers", "nope", tmp=tmp_path)
    assert out.returncode == 1 and "Valid ids:" in out.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[servers.x]\nreplicas = 2\n")
    out = gaia_env("serve", "--config", str(bad), tmp=tmp_path)
    assert out.returncode == 1 and "needs a command" in out.stderr


def test_cache_stats_export_import_clear(tmp_path: Path) -> None:
    from gaia_kit.web.cache import CachedResponse, ResponseCache

    path = tmp_path / "http-cache.sqlite"
    cache = ResponseCache(path)
    cache.put(
        "k1",
        CachedResponse(
            "GET",
            "https://en.wikipedia.org/wiki/Tern",
            200,
            {},
            b"<html>tern</html>",
            "https://en.wikipedia.org/wiki/Tern",
            1.0,
        ),
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "gaia_env", "cache", *args, "--path", str(path)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60)

    stats = run("stats")
    assert stats.returncode == 0 and json.loads(stats.stdout)["entries"] == 1
    assert "exported 1" in run("export", str(tmp_path / "dump.jsonl")).stdout
    assert "removed 1" in run("clear").stdout
    assert json.loads(run("stats").stdout)["entries"] == 0
    assert "imported 1" in run("import", str(tmp_path / "dump.jsonl")).stdout
    assert ResponseCache(path).get("k1").content == b"<html>tern</html>"
    missing = run("export")
    assert missing.returncode == 2 and "needs a FILE" in missing.stderr
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    bad = run("import", str(tmp_path / "bad.jsonl"))
    assert bad.returncode == 1 and "cannot import" in bad.stderr


def test_cache_commands_use_redis_when_gaia_http_cache_url_names_it(tmp_path: Path, redis_url: str) -> None:
    from gaia_kit.web.cache import CachedResponse, RedisCache

    RedisCache(redis_url).put(
        "k1", CachedResponse("GET", "https://arxiv.org/abs/1", 200, {}, b"paper", "", 1.0)
    )
    env = {
        **os.environ,
        "GAIA_HTTP_CACHE_URL": redis_url,
        "GAIA_HTTP_CACHE_PATH": str(tmp_path / "no.sqlite"),
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "gaia_env", "cache", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)

    stats = json.loads(run("stats").stdout)
    assert (stats["entries"], stats["url"], stats["hosts"]) == (1, redis_url, {"arxiv.org": 1})
    assert f"exported 1 responses from {redis_url}" in run("export", str(tmp_path / "dump.jsonl")).stdout
    assert "removed 1" in run("clear").stdout and not (tmp_path / "no.sqlite").exists()
    env["GAIA_HTTP_CACHE_URL"] = "http://127.0.0.1:1"
    wrong = run("stats")
    assert wrong.returncode == 1 and "not a redis:// or rediss:// URL" in wrong.stderr
