"""The `gaia-env` command: serve, tools, call, cache, corpus, doctor."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from gaia_contract import AUTH_TOKEN_ENV, CLIENT_SESSION_HEADER, SERVERS_HEADER
from gaia_kit.core.settings import KitSettings, settings

from . import logs
from .app import HttpConfig, create_app, is_loopback
from .confine import ConfinementUnavailable
from .costs import CostConfigError
from .gateway import Gateway, GatewayConfig, SelectionError, UnknownTool
from .registry import DEFAULT_REGISTRY, RegistryError, load_registry, select_enabled
from .sessions import RootInUse, SessionLimits
from .tools_doc import render_markdown, render_table


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        sys.exit(args.handler(args) or 0)
    except (RegistryError, CostConfigError) as exc:
        sys.exit(f"gaia-env: {exc}")
    except ConfinementUnavailable as exc:
        print(f"gaia-env: {exc}", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gaia-env", description="One MCP endpoint for every GAIA tool server."
    )
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="serve every enabled server on one HTTP endpoint")
    _gateway_options(serve)
    serve.add_argument("--host", default=os.environ.get("GAIA_HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("GAIA_PORT", "8080")))
    serve.add_argument(
        "--allowed-hosts",
        default=os.environ.get("GAIA_ALLOWED_HOSTS", ""),
        help="extra Host header values to accept, comma-separated (host or host:port; * for any)",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host without MCP_AUTH_TOKEN (anyone who reaches it can run tools)",
    )
    serve.add_argument("--max-body-mb", type=float, default=16.0, help="request body limit in MiB")
    serve.add_argument(
        "--max-header-kb",
        type=float,
        default=float(os.environ.get("GAIA_MAX_HEADER_KB", "16")),
        help="limit in KiB on a request's headers, names and values together; more is answered 431 "
        "(GAIA_MAX_HEADER_KB)",
    )
    serve.add_argument("--log-level", default=os.environ.get("GAIA_LOG_LEVEL", "info"))
    serve.add_argument(
        "--vnc",
        action="store_true",
        default=os.environ.get("GAIA_VNC", "").lower() in {"1", "true", "yes", "on"},
        help="run the browsers headful on a virtual display and show it at http://HOST:5901/vnc.html",
    )
    serve.add_argument(
        "--vnc-host", help="address of the VNC web page (GAIA_VNC_HOST; needs GAIA_VNC_PASSWORD)"
    )
    serve.add_argument("--vnc-port", type=int, help="port of the VNC web page (GAIA_VNC_PORT, default 5901)")
    serve.set_defaults(handler=cmd_serve)

    tools = sub.add_parser("tools", help="list the tools of the selected servers")
    _gateway_options(tools)
    tools.add_argument("--format", choices=["table", "markdown", "json"], default="table")
    tools.add_argument("--output", type=Path, help="write to this file instead of stdout")
    tools.set_defaults(handler=cmd_tools)

    call = sub.add_parser("call", help="call one tool and print its result")
    _gateway_options(call)
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    call.add_argument(
        "--url", help="call a running gateway (e.g. http://127.0.0.1:8080/mcp) instead of starting one"
    )
    call.add_argument("--session", help="session key (X-Session-Id) for --url calls")
    call.set_defaults(handler=cmd_call)

    cache = sub.add_parser(
        "cache", help="the servers' shared HTTP record/replay cache: stats, export, import, clear"
    )
    cache.add_argument("action", choices=["stats", "export", "import", "clear"])
    cache.add_argument("file", nargs="?", type=Path, help="the JSONL file to export to or import from")
    cache.add_argument(
        "--path",
        type=Path,
        help="the cache file (default: Redis at GAIA_HTTP_CACHE_URL, else GAIA_HTTP_CACHE_PATH)",
    )
    cache.set_defaults(handler=cmd_cache)

    corpus = sub.add_parser(
        "corpus", help="the offline search index: build it from a folder of documents or a .zim file, stats"
    )
    corpus.add_argument("action", choices=["build", "stats"])
    corpus.add_argument(
        "source", nargs="?", type=Path, help="build: a folder (html, md, txt, pdf) or a .zim file"
    )
    corpus.add_argument(
        "--output", "--path", dest="index", type=Path, help="the index file (default: GAIA_CORPUS_PATH)"
    )
    corpus.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="processes converting documents (default: all cores)",
    )
    corpus.set_defaults(handler=cmd_corpus)

    doctor = sub.add_parser(
        "doctor",
        help="check, per server, that it starts, its backend and what it is missing (exit 1 if any fails)",
    )
    _gateway_options(doctor)
    doctor.set_defaults(handler=cmd_doctor)
    return parser


def _gateway_options(parser: argparse.ArgumentParser) -> None:
    kit = settings(KitSettings)
    parser.add_argument(
        "--config",
        type=Path,
        default=Path(os.environ.get("GAIA_CONFIG", DEFAULT_REGISTRY)),
        help="the server registry (servers.toml)",
    )
    parser.add_argument(
        "--servers",
        default=os.environ.get("GAIA_SERVERS", ""),
        help="comma-separated server ids (default: every enabled server)",
    )
    parser.add_argument("--replicas", type=int, help="replicas per server, overriding the registry")
    parser.add_argument(
        "--workspace-root",
        type=Path,
        default=kit.workspace_root,
        help="parent of the per-session workspaces (GAIA_WORKSPACE_ROOT)",
    )
    parser.add_argument(
        "--dataset-dir",
        type=Path,
        default=kit.dataset_dir,
        help="the GAIA dataset, readable by every session (GAIA_DATASET_DIR)",
    )
    parser.add_argument(
        "--session-ttl",
        type=float,
        default=float(os.environ.get("GAIA_SESSION_TTL", "1800")),
        help="seconds an idle session keeps its workspace",
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=int(os.environ.get("GAIA_MAX_SESSIONS", SessionLimits.max_sessions)),
        help="sessions with a workspace at once; more are refused (GAIA_MAX_SESSIONS, 0: no limit)",
    )
    parser.add_argument(
        "--max-sessions-per-client",
        type=int,
        default=int(os.environ.get("GAIA_MAX_SESSIONS_PER_CLIENT", SessionLimits.max_sessions_per_client)),
        help="sessions one client (its bearer token, else its address) may hold at once "
        "(GAIA_MAX_SESSIONS_PER_CLIENT, 0: no limit)",
    )
    parser.add_argument(
        "--session-evict-after-s",
        type=float,
        default=float(os.environ.get("GAIA_SESSION_EVICT_AFTER_S", SessionLimits.evict_after_s)),
        help="at a session limit, the least recently used session idle this long is ended to make room "
        "(GAIA_SESSION_EVICT_AFTER_S)",
    )
    parser.add_argument(
        "--max-unused-sessions",
        type=int,
        default=int(os.environ.get("GAIA_MAX_UNUSED_SESSIONS", SessionLimits.max_unused_sessions)),
        help="MCP sessions that have not called a tool yet, at once; more initialize calls are answered "
        "503 (GAIA_MAX_UNUSED_SESSIONS, 0: no limit)",
    )
    parser.add_argument(
        "--unused-session-ttl",
        type=float,
        default=float(os.environ.get("GAIA_UNUSED_SESSION_TTL", SessionLimits.unused_ttl_s)),
        help="seconds an MCP session that has not called a tool yet lives without a call "
        "(GAIA_UNUSED_SESSION_TTL)",
    )
    parser.add_argument(
        "--min-free-disk-mb",
        type=int,
        default=int(os.environ.get("GAIA_MIN_FREE_DISK_MB", SessionLimits.min_free_disk_mb)),
        help="free disk below which new workspaces are refused (GAIA_MIN_FREE_DISK_MB, 0: never)",
    )


def make_gateway(args: argparse.Namespace, serving: bool = False) -> Gateway:
    registry = load_registry(args.config)
    only = [s.strip() for s in args.servers.split(",") if s.strip()] or None
    specs = select_enabled(registry, only, args.replicas)
    config = GatewayConfig(
        workspace_root=args.workspace_root.absolute(),
        dataset_dir=args.dataset_dir.absolute(),
        session_ttl=args.session_ttl,
        session_limits=SessionLimits(
            args.max_sessions,
            args.min_free_disk_mb,
            max_sessions_per_client=args.max_sessions_per_client,
            evict_after_s=args.session_evict_after_s,
            max_unused_sessions=args.max_unused_sessions,
            unused_ttl_s=args.unused_session_ttl,
        ),
        # Replicas behind one load balancer record their sessions' owners where they share the cache.
        owners_url=_cache_url() if serving else "",
        own_root=serving,
    )
    return Gateway(specs, config, all_ids=list(registry))


def _cache_url() -> str:
    from gaia_kit.web.config import HttpSettings

    return settings(HttpSettings).cache_url


def cmd_serve(args: argparse.Namespace) -> int:
    token = os.environ.get(AUTH_TOKEN_ENV) or None
    if not is_loopback(args.host) and not token and not args.insecure:
        print(
            f"gaia-env: refusing to serve on {args.host} without MCP_AUTH_TOKEN: anyone who can reach it could run "
            "tools. Set MCP_AUTH_TOKEN, or pass --insecure if the network is trusted.",
            file=sys.stderr,
        )
        return 2
    logs.configure(args.log_level)
    vnc = None
    if args.vnc:
        from .vnc import VncConfig, VncError, VncView

        try:
            vnc = VncView(VncConfig.from_env(args.vnc_host, args.vnc_port))
            # Before the gateway exists: it hands this environment to every server it starts.
            os.environ.update(vnc.start())
        except (VncError, OSError, ValueError) as exc:
            print(f"gaia-env: the VNC view did not start: {exc}", file=sys.stderr)
            return 2
        print(f"gaia-env: VNC view at {vnc.url}", file=sys.stderr)
        _stop_on_sigterm(vnc)
    try:
        return _serve(args, token)
    finally:
        if vnc:
            vnc.stop()


def _stop_on_sigterm(vnc: Any) -> None:
    """uvicorn ends by re-raising the SIGTERM it handled, which would skip `finally`: stop the view first."""

    def stop_then_die(sig: int, frame: Any) -> None:
        vnc.stop()
        signal.signal(sig, signal.SIG_DFL)
        signal.raise_signal(sig)

    signal.signal(signal.SIGTERM, stop_then_die)


def _serve(args: argparse.Namespace, token: str | None) -> int:
    import uvicorn

    try:
        gateway = make_gateway(args, serving=True)
    except RootInUse as exc:
        print(f"gaia-env: {exc}", file=sys.stderr)
        return 2
    print(f"gaia-env: {gateway.plan_text()}", file=sys.stderr, flush=True)
    http = HttpConfig(
        host=args.host,
        auth_token=token,
        allowed_hosts=[h.strip() for h in args.allowed_hosts.split(",") if h.strip()],
        insecure=args.insecure,
        max_body_bytes=int(args.max_body_mb * 1024 * 1024),
        max_header_bytes=int(args.max_header_kb * 1024),
    )
    app = create_app(gateway, http)
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_config=None, access_log=False, timeout_graceful_shutdown=5
    )
    uvicorn.Server(config).run()
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    gateway = make_gateway(args)
    tools = asyncio.run(_with_gateway(gateway, lambda g: g.list_tools(tuple(g.pools))))
    failed = {sid: p.last_error for sid, p in gateway.pools.items() if not p.tools}
    if args.format == "json":
        text = json.dumps(tools, indent=2) + "\n"
    elif args.format == "markdown":
        text = render_markdown(gateway, tools)
    else:
        text = render_table(tools)
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    for sid, error in failed.items():
        print(f"gaia-env: {sid} did not start: {error}", file=sys.stderr)
    return 1 if failed else 0


def cmd_call(args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.arguments)
        if not isinstance(arguments, dict):
            raise ValueError("not an object")
    except ValueError:
        print(f"gaia-env: arguments must be a JSON object, got: {args.arguments}", file=sys.stderr)
        return 2
    if args.url:
        result = _call_remote(args.url, args.tool, arguments, args.session, args.servers)
    else:
        gateway = make_gateway(args)

        async def run(g: Gateway) -> dict[str, Any]:
            return await g.call_tool(args.tool, arguments, tuple(g.pools), args.session)

        try:
            result = asyncio.run(_with_gateway(gateway, run, wait_async=True))
        except (UnknownTool, SelectionError) as exc:
            print(f"gaia-env: {exc}", file=sys.stderr)
            return 2
    for block in result.get("content", []):
        if block.get("type") == "text":
            print(block["text"])
        else:
            print(f"[{block.get('type')} content, {block.get('mimeType', '')}]")
    return 1 if result.get("isError") else 0


def _call_remote(
    url: str, tool: str, arguments: dict[str, Any], session: str | None, servers: str
) -> dict[str, Any]:
    import httpx

    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        headers[CLIENT_SESSION_HEADER] = session
    if servers:
        headers[SERVERS_HEADER] = servers
    if token := os.environ.get(AUTH_TOKEN_ENV):
        headers["Authorization"] = f"Bearer {token}"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    try:
        reply = httpx.post(url, json=body, headers=headers, timeout=None).json()
    except (httpx.HTTPError, ValueError) as exc:
        return {
            "content": [{"type": "text", "text": f"Could not reach the gateway at {url}: {exc}"}],
            "isError": True,
        }
    if "error" in reply:
        return {
            "content": [
                {"type": "text", "text": f"Error {reply['error']['code']}: {reply['error']['message']}"}
            ],
            "isError": True,
        }
    return reply["result"]


def cmd_cache(args: argparse.Namespace) -> int:
    from gaia_kit.web.cache import CacheError, open_cache
    from gaia_kit.web.config import HttpSettings

    http = settings(HttpSettings)
    url = "" if args.path else http.cache_url  # --path names a file: the file it is
    path = args.path or http.cache_path
    if args.action in ("export", "import") and args.file is None:
        print(f"gaia-env: cache {args.action} needs a FILE (JSONL).", file=sys.stderr)
        return 2
    if not url and args.action != "import" and not path.exists():
        print(f"gaia-env: no HTTP cache at {path} yet (set GAIA_HTTP_CACHE_PATH or --path).", file=sys.stderr)
        return 1
    try:
        cache = open_cache(url, path)
    except CacheError as exc:
        print(f"gaia-env: {exc}", file=sys.stderr)
        return 1
    path = cache.location
    if args.action == "stats":
        print(json.dumps(cache.stats(), indent=2))
    elif args.action == "export":
        print(f"exported {cache.export(args.file)} responses from {path} to {args.file}")
    elif args.action == "import":
        try:
            count = cache.import_(args.file)
        except (OSError, ValueError, KeyError) as exc:
            print(f"gaia-env: cannot import {args.file}: {exc}", file=sys.stderr)
            return 1
        print(f"imported {count} responses from {args.file} into {path}")
    else:
        print(f"removed {cache.clear()} responses from {path}")
    return 0


def cmd_corpus(args: argparse.Namespace) -> int:
    from gaia_kit.core.errors import ToolFailure
    from gaia_kit.pages.corpus import Corpus, default_index_path
    from gaia_kit.pages.indexing import build

    index = args.index or default_index_path()
    try:
        if args.action == "stats":
            print(json.dumps(Corpus.open(index).stats(), indent=2, ensure_ascii=False))
            return 0
        if args.source is None:
            print(
                "gaia-env: corpus build needs a SOURCE: a folder of documents or a .zim file.",
                file=sys.stderr,
            )
            return 2
        report = build(args.source, index, progress=_build_progress, jobs=max(1, args.jobs))
    except ToolFailure as exc:
        print(f"gaia-env: {exc}", file=sys.stderr)
        return 1
    print(
        f"indexed {report.documents} documents ({report.skipped} skipped) from {args.source} into "
        f"{report.path} in {report.seconds:g} s; set GAIA_CORPUS_PATH={report.path} to use it"
    )
    return 0


def _build_progress(count: int) -> None:
    if count % 10_000 == 0:
        print(f"  {count:,} documents", file=sys.stderr, flush=True)


def cmd_doctor(args: argparse.Namespace) -> int:
    """ok: starts with nothing missing; warn: starts, some tools need a setting; FAIL: does not start."""
    gateway = make_gateway(args)
    asyncio.run(_with_gateway(gateway, lambda g: None))
    failed = 0
    if gateway.confinement is None:
        print(
            "warn servers are not confined (GAIA_SERVER_CONFINE=0): they see the host as the gateway's user"
        )
    else:
        print(f"ok   servers confined: own namespaces, uid {gateway.server_uid}, dataset read-only")
    for sid, pool in gateway.pools.items():
        check = _server_check(pool.spec.argv(), pool.env)
        missing = check.get("missing", [])
        if not pool.tools:
            failed += 1
            print(f"FAIL {sid}: does not start: {pool.last_error}")
        else:
            print(f"{'warn' if missing else 'ok  '} {sid}: starts, {len(pool.tools)} tools")
        if check.get("backend"):
            print(f"     backend: {check['backend']}")
        for item in missing:
            print(f"     missing: {item}")
        for note in check.get("notes", []):
            print(f"     note: {note}")
    return 1 if failed else 0


def _server_check(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Ask the server itself (its --check flag) which backend it will use and what it lacks."""
    try:
        out = subprocess.run(argv + ["--check"], env=env, capture_output=True, text=True, timeout=60)
        return json.loads(out.stdout) if out.returncode == 0 else {"missing": [out.stderr.strip()[-300:]]}
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        return {"missing": [f"--check failed: {exc}"]}


async def _with_gateway(gateway: Gateway, fn: Any, wait_async: bool = False) -> Any:
    await gateway.start()
    try:
        result = fn(gateway)
        return await result if wait_async else result
    finally:
        await gateway.close()
