"""Operator endpoints: /health, /ready, /metrics and the status page at /."""

from __future__ import annotations

import html
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from .gateway import Gateway


def routes_for(gateway: Gateway) -> dict[str, Any]:
    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def ready(request: Request) -> Response:
        return JSONResponse(gateway.status(), status_code=200 if gateway.ready else 503)

    async def metrics(request: Request) -> Response:
        return PlainTextResponse(gateway.metrics.render(), media_type="text/plain; version=0.0.4")

    async def status_page(request: Request) -> Response:
        return HTMLResponse(render_status(gateway.status(), _calls_by_server(gateway)))

    return {"/health": health, "/ready": ready, "/metrics": metrics, "/": status_page}


def _calls_by_server(gateway: Gateway) -> dict[str, dict[str, float]]:
    totals: dict[str, dict[str, float]] = {}
    for family in gateway.metrics.registry.collect():
        if family.name != "gaia_env_tool_calls":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                server = totals.setdefault(sample.labels["server"], {})
                outcome = sample.labels["outcome"]
                server[outcome] = server.get(outcome, 0) + sample.value
    return totals


def render_status(status: dict[str, Any], calls: dict[str, dict[str, float]]) -> str:
    rows = []
    for sid, info in status["servers"].items():
        counts = calls.get(sid, {})
        replicas = " ".join(r["state"] for r in info["replicas"])
        rows.append(
            f"<tr class='{html.escape(info['state'])}'><td>{html.escape(sid)}</td><td>{html.escape(info['state'])}</td>"
            f"<td>{html.escape(replicas)}</td><td>{info['tools']}</td><td>{info['in_flight']}</td>"
            f"<td>{int(counts.get('ok', 0))}</td><td>{int(counts.get('tool_error', 0) + counts.get('gateway_error', 0))}</td>"
            f"<td>{info['restarts']}</td><td>{html.escape(info['last_error'] or '')}</td></tr>"
        )
    overall = "ready" if status["ready"] else "not ready"
    limits = status.get("session_limits") or {}
    sessions = f"sessions {status['sessions']}"
    if limits:
        cap = limits["max_sessions"] or "no limit"
        sessions += f" (max {cap}) &middot; free disk {limits['free_disk_mb']:,} MB (floor {limits['min_free_disk_mb']:,})"
        if not limits["accepting_new"]:
            sessions += " &middot; <strong>refusing new sessions</strong>"
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="5"><title>gaia-env: {overall}</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2rem;color:#222}} table{{border-collapse:collapse}}
td,th{{padding:.35rem .7rem;border-bottom:1px solid #ddd;text-align:left}} th{{background:#f4f4f4}}
tr.ready td:nth-child(2){{color:#17803d}} tr.failed td:nth-child(2){{color:#b42318;font-weight:bold}}
tr.restarting td:nth-child(2),tr.starting td:nth-child(2),tr.degraded td:nth-child(2){{color:#b54708}}
.muted{{color:#666}}
</style></head><body>
<h1>gaia-env gateway: {overall}</h1>
<p class="muted">MCP endpoint <code>POST /mcp</code> (one workspace per session:
<code>POST /sessions</code>, then its <code>/sessions/&lt;id&gt;/mcp</code>) &middot; uptime {status["uptime_s"]} s &middot;
{sessions} &middot; <a href="/ready">/ready</a> &middot; <a href="/metrics">/metrics</a></p>
<table><tr><th>server</th><th>state</th><th>replicas</th><th>tools</th><th>in flight</th><th>calls ok</th>
<th>errors</th><th>restarts</th><th>last error</th></tr>
{"".join(rows)}
</table></body></html>"""
