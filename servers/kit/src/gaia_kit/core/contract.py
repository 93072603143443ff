"""The wire contract between the gateway and its servers, in one place both import.

Plain constants and one helper, no imports: the gateway, the kit and any client can read this
module without pulling in a server's dependencies.
"""

SESSION_ID_KEY = "gaia-env/session-id"
"""`_meta` key of every forwarded call: the session the call belongs to."""

WORKSPACE_KEY = "gaia-env/workspace"
"""`_meta` key of every forwarded call: that session's private workspace directory."""

SESSION_ENDED = "notifications/gaia-env/session_ended"
"""Sent by the gateway to the stateful servers a session used when it ends (`{"sessionId": ...}`),
so they release what they kept for it."""

BUSY = -32029
"""JSON-RPC error code of a call refused for lack of capacity; `data` carries RETRY_AFTER."""

RETRY_AFTER = "retryAfter"
"""Key in a busy error's `data`: whole seconds to wait before sending the call again."""


def busy_message(what: str, retry_after: int) -> str:
    """The one wording of a busy answer: what is busy, and when to come back."""
    return f"{what}; retry after {retry_after} s."
