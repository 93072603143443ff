"""A turn's reasoning and what it says outside it: only the latter is acted on.

Thinking models write `<think>…</think>` before the part of the turn that counts (the tool calls, the
answer). Thinking templates (Qwen3-Thinking's) open `<think>` in the generation prompt, so the sampled
text holds only the closing tag; a turn cut before it is reasoning from end to end. An `<answer>` or a
`<tool_call>` drafted in a thought is a draft: never executed, never scored.
"""

from __future__ import annotations

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


def opens_reasoning(context: str) -> bool:
    """Whether the text the model continues from leaves a `<think>` open (a thinking template's prompt)."""
    return context.rstrip().endswith(THINK_OPEN)


def split_reasoning(text: str, opened: bool = False) -> tuple[str, str]:
    """(reasoning, visible) of one turn's text; `opened`: the context opened `<think>` before the turn.

    A closing tag with no opening before it also closes a thought the template opened. A thought left
    open runs to the end of the text: a turn cut inside its reasoning has nothing visible after it.
    """
    thoughts: list[str] = []
    visible: list[str] = []
    rest = text
    close = rest.find(THINK_CLOSE)
    if opened or (close >= 0 and THINK_OPEN not in rest[:close]):
        if close < 0:
            return rest, ""
        thoughts.append(rest[:close])
        rest = rest[close + len(THINK_CLOSE) :]
    while (start := rest.find(THINK_OPEN)) >= 0:
        visible.append(rest[:start])
        rest = rest[start + len(THINK_OPEN) :]
        close = rest.find(THINK_CLOSE)
        if close < 0:
            thoughts.append(rest)
            rest = ""
            break
        thoughts.append(rest[:close])
        rest = rest[close + len(THINK_CLOSE) :]
    visible.append(rest)
    return "".join(thoughts), "".join(visible)


def in_reasoning(text: str, opened: bool = False) -> bool:
    """Whether `text` ends inside a thought (no `</think>` yet for the last one opened)."""
    last_open = text.rfind(THINK_OPEN)
    last_close = text.rfind(THINK_CLOSE)
    if last_open > last_close:
        return True
    return opened and last_close < 0
