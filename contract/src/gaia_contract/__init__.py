"""gaia-env's wire contract: what the gateway, its servers and its clients must spell alike.

Plain constants and two helpers, no imports: the gateway, the kit and the trainer (on a GPU node,
without the rest of the project) all read it, and nothing else may keep a copy.
"""

# ---- environment variables a client reads ----

SERVER_URL_ENV = "MCP_SERVER_URL"
"""The gateway's MCP endpoint (`http://HOST:8080/mcp`; the trainer also takes a comma list)."""
SERVERS_ENV = "MCP_SERVERS"
"""Comma-separated server ids a client selects, sent as SERVERS_HEADER."""
AUTH_TOKEN_ENV = "MCP_AUTH_TOKEN"
"""The bearer token the gateway requires (and clients send as `Authorization: Bearer ...`)."""
AUTH_TOKEN_FILE_ENV = "MCP_AUTH_TOKEN_FILE"
"""A file holding that token, for clients that keep secrets out of the environment."""

# ---- request headers and query ----

SERVERS_HEADER = "MCP-Servers"
"""Server selection (`a,b,c`). Header names are case-insensitive; see SERVERS_HEADER_AS_SENT."""
SERVERS_HEADER_AS_SENT = "MCP_SERVERS"
"""The spelling existing GAIA clients send. nginx and other proxies drop names with underscores by
default, so the gateway accepts both and clients of this project send SERVERS_HEADER."""
SERVERS_QUERY = "servers"
"""`?servers=a,b`: server selection for clients that cannot set headers."""
MCP_SESSION_HEADER = "Mcp-Session-Id"
"""The MCP SDK's own session header (stateful streamable HTTP)."""
CLIENT_SESSION_HEADER = "X-Session-Id"
"""A session a client names itself: its workspace and state last across bare requests."""

# ---- _meta keys ----

SESSION_ID_KEY = "gaia-env/session-id"
"""`_meta` key of every forwarded call: the session the call belongs to. A client may send it too."""
WORKSPACE_KEY = "gaia-env/workspace"
"""`_meta` key of every forwarded call: that session's private workspace directory."""
META_SESSION_KEYS = (SESSION_ID_KEY, "session_id", "sessionId")
"""The `_meta` keys a client may name its session with, in the order the gateway reads them."""

# ---- session endings ----

SESSION_ENDED = "notifications/gaia-env/session_ended"
"""Sent by the gateway to the stateful servers a session used when it ends (`{"sessionId": ...}`),
so they release what they kept for it."""

# ---- the busy answer ----

BUSY = -32029
"""JSON-RPC error code of a call refused for lack of capacity; `data` carries RETRY_AFTER."""
RETRY_AFTER = "retryAfter"
"""Key in a busy error's `data`: whole seconds to wait before sending the call again."""
BUSY_SERVER = "server"
"""Key in the gateway's busy error `data`: the server id that was busy."""


def busy_message(what: str, retry_after: int) -> str:
    """The one wording of a busy answer: what is busy, and when to come back."""
    return f"{what}; retry after {retry_after} s."


# ---- the session-gone answer ----

SESSION_GONE = -32030
"""JSON-RPC error code of a call whose session lived on a gateway replica that no longer serves it
(the replica stopped or restarted, or the replicas changed and the load balancer now routes the
session elsewhere). Its workspace and state are not here: the session cannot go on, start a new one.
`data` carries GONE_REASON (one of the GONE_* values), GONE_OWNER and GONE_REPLICA. The client did
nothing wrong: a trainer counts such an episode as an environment fault, not as the agent's failure.
docs/scaling.md has the wire form."""

GONE_REASON = "reason"
"""Key in a session-gone error's `data`: why the session cannot be served here."""
GONE_OWNER = "owner"
"""Key in a session-gone error's `data`: the replica (`name/incarnation`) that held the session, when known."""
GONE_REPLICA = "replica"
"""Key in a session-gone error's `data`: the replica (`name/incarnation`) or load balancer that answered."""

GONE_RESTARTED = "replica_restarted"
"""The session's replica restarted: the new process has none of the old one's sessions."""
GONE_ELSEWHERE = "owned_elsewhere"
"""Another replica holds (or held) the session: its replica stopped, or the replicas changed."""
GONE_UNREACHABLE = "replica_unreachable"
"""The load balancer could not reach the replica (it died during the call, or before it)."""


def session_gone_message(why: str) -> str:
    """The one wording of a session-gone answer: what happened, and what to do."""
    return f"This session's gateway replica is gone ({why}); its workspace and state are lost: start a new session."


# ---- the task a session serves, its costs and what was withheld (docs/gateway.md) ----

TASK_KEY = "gaia-env/task"
"""`_meta` key a client may send with a tools/call (the trainer and `gaia-train eval` do): the task the
session serves, `{"question": "..."}`. Never shown to the model. The gateway keeps the latest one per
session and forwards it with every call, so the web-facing tools can withhold pages that quote it."""

BUDGET_SPENT_KEY = "gaia-env/budget-spent"
"""`_meta` key of a forwarded call: the paid backends whose session budget is spent (a list of backend
names; "*" when the session's money budget is spent). Those backends refuse the call; free ones serve it."""

USAGE_KEY = "gaia-env/usage"
"""`_meta` key of a tool result: what the call spent on paid backends, `{backend: {"calls": n,
"input_tokens": n, "output_tokens": n, "bytes": n}}` (only the counts the backend reported)."""

COST_KEY = "gaia-env/cost"
"""`_meta` key the gateway adds to a tool result that used a paid backend, or whose session has spent
anything: `{"usd": <this call>, "backends": {...this call}, "session": <the session's ledger>}`."""

WITHHELD_KEY = "gaia-env/withheld"
"""`_meta` key of a tool result: what the benchmark-copy guard withheld in this call, a list of
`{"reason": "quotes_task" | "mirror", "source": <url or what>, "overlap": <0..1>}`."""


def budget_spent_message(backend: str, why: str) -> str:
    """The one wording of a call refused because the session's budget for a paid backend is spent."""
    return (
        f"This session's budget for {backend} is spent ({why}); this tool cannot call it again in this "
        "session: use a free tool (the local reader, the wiki, documents) or answer with what you have."
    )
