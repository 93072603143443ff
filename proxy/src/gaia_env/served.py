"""Which replica answered, and which sessions it serves: for clients and operators behind a load balancer.

Every answer carries `X-Gaia-Replica: <name>/<incarnation>`, so a client (or a test) sees where each
call of a session landed; `GET /sessions` (behind the same token as every other path) lists the
sessions this replica holds.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .gateway import Gateway

REPLICA_HEADER = "x-gaia-replica"


class ReplicaHeader:
    """Add X-Gaia-Replica to every HTTP answer."""

    def __init__(self, app: ASGIApp, replica: str):
        self.app = app
        self.value = replica.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [*message.get("headers", []), (REPLICA_HEADER.encode(), self.value)],
                }
            await send(message)

        await self.app(scope, receive, tagged)


def sessions_route(gateway: Gateway):
    async def sessions(request: Request) -> Response:
        replica = gateway.config.replica
        held = gateway.sessions.served()
        return JSONResponse(
            {
                "replica": replica.name,
                "incarnation": replica.incarnation,
                "count": len(held),
                "sessions": held,
            }
        )

    return sessions
