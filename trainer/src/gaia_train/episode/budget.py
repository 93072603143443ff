"""The token budget of one training episode, and whether a recipe's settings agree with each other.

In VeRL the whole multi-turn response (every assistant turn and every tool response) shares
`data.max_response_length`, after a prompt that holds the tool schemas. With per-turn caps
(GAIA_TURN_TOKENS for what a turn may sample, GAIA_TOOL_TOKENS_PER_TURN for what the environment
adds after it) a turn costs at most their sum, so how many turns fit is arithmetic, not hope.
A team's roles share the one response: each delegation also costs its hand-off (the role's prompt
with its tool schemas, mask 0), and the turns are every role's together.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_REASONING_TOKENS = 6144
"""GAIA_REASONING_TOKENS when unset: how long a turn's thought may run across continued generations
(a thinking model's thoughts on GAIA run to thousands of tokens: fewer, longer turns)."""


@dataclass(frozen=True)
class Budget:
    model_len: int
    prompt_length: int
    response_length: int
    max_turns: int
    turn_tokens: int | None
    tool_tokens: int | None
    longest_prompt: int | None = None
    """Tokens of the longest rendered prompt, tool schemas included; None when it was not counted."""
    tool_output_tokens: int | None = None
    """Estimated tokens of one tool output at the character cap; None when not estimated."""
    delegations: int = 0
    """A team's max_delegations; 0 for one agent."""
    handoff_tokens: int | None = None
    """Tokens of the longest hand-off to a team's role (its prompt, the task, its schemas); None: not counted."""
    reasoning_tokens: int | None = None
    """GAIA_REASONING_TOKENS: a thought cut at turn_tokens goes on until it has this many; None: no continuation."""

    @property
    def sampled_per_turn(self) -> int | None:
        """The most one turn samples: a thought continued up to reasoning_tokens, then one generation more."""
        if self.turn_tokens is None:
            return None
        return self.turn_tokens + (self.reasoning_tokens or 0)

    @property
    def turns_that_fit(self) -> int | None:
        """Turns guaranteed to fit: n turns cost n * sampled_per_turn + (n - 1) * tool_tokens, after the hand-offs."""
        if self.sampled_per_turn is None or self.tool_tokens is None:
            return None
        room = self.response_length - self.delegations * (self.handoff_tokens or 0)
        return max(0, (room + self.tool_tokens) // (self.sampled_per_turn + self.tool_tokens))

    def problems(self) -> list[str]:
        """Each way the settings contradict each other, as one sentence that says what to change."""
        found = []
        if self.prompt_length + self.response_length > self.model_len:
            found.append(
                f"data.max_prompt_length ({self.prompt_length}) + data.max_response_length "
                f"({self.response_length}) = {self.prompt_length + self.response_length} is more than "
                f"actor_rollout_ref.rollout.max_model_len ({self.model_len}): lower PROMPT_LENGTH or "
                "RESPONSE_LENGTH, or raise MAX_MODEL_LEN"
            )
        if self.longest_prompt is not None and self.longest_prompt > self.prompt_length:
            found.append(
                f"the longest prompt is {self.longest_prompt} tokens with its tool schemas, more than "
                f"data.max_prompt_length ({self.prompt_length}): select fewer servers (MCP_SERVERS) or "
                f"raise PROMPT_LENGTH to at least {self.longest_prompt}"
            )
        if self.turn_tokens is not None and self.turn_tokens > self.response_length:
            found.append(
                f"GAIA_TURN_TOKENS ({self.turn_tokens}) is more than the whole response budget "
                f"data.max_response_length ({self.response_length})"
            )
        fit = self.turns_that_fit
        if fit is not None and fit < self.max_turns:
            assert self.sampled_per_turn is not None and self.tool_tokens is not None
            needed = (
                self.max_turns * self.sampled_per_turn
                + (self.max_turns - 1) * self.tool_tokens
                + self.delegations * (self.handoff_tokens or 0)
            )
            handoffs = (
                f" and {self.delegations} hand-offs of {self.handoff_tokens} tokens"
                if self.delegations and self.handoff_tokens
                else ""
            )
            thought = f" (thoughts up to {self.reasoning_tokens})" if self.reasoning_tokens else ""
            found.append(
                f"only {fit} of max_assistant_turns={self.max_turns} turns fit in data.max_response_length "
                f"({self.response_length}) at {self.sampled_per_turn} sampled{thought} + {self.tool_tokens} "
                f"tool tokens a turn{handoffs}: raise RESPONSE_LENGTH to {needed}, or lower MAX_TURNS, "
                "TURN_TOKENS, REASONING_TOKENS or TOOL_TOKENS_PER_TURN"
            )
        return found

    def warnings(self) -> list[str]:
        if (
            self.tool_output_tokens is not None
            and self.tool_tokens is not None
            and self.tool_output_tokens > self.tool_tokens
        ):
            return [
                f"one tool output at the character cap (max_tool_response_length) is about "
                f"{self.tool_output_tokens} tokens, more than GAIA_TOOL_TOKENS_PER_TURN ({self.tool_tokens}): "
                "long outputs will be cut to fit the turn"
            ]
        if self.turn_tokens is None or self.tool_tokens is None:
            return [
                "no per-turn caps (GAIA_TURN_TOKENS, GAIA_TOOL_TOKENS_PER_TURN): one long turn or tool output "
                "can spend the whole response budget, so no number of turns is guaranteed"
            ]
        return []

    def table(self) -> str:
        def cell(value: int | None) -> str:
            return "not counted" if value is None else str(value)

        rows = [
            ("model length", self.model_len),
            ("prompt length", self.prompt_length),
            ("longest prompt, tool schemas included", self.longest_prompt),
            ("response length (all turns and tool responses)", self.response_length),
            ("sampled tokens per generation (GAIA_TURN_TOKENS)", self.turn_tokens),
            ("a thought continued up to (GAIA_REASONING_TOKENS)", self.reasoning_tokens),
            ("sampled tokens per turn at most", self.sampled_per_turn),
            ("tool tokens per turn (GAIA_TOOL_TOKENS_PER_TURN)", self.tool_tokens),
            ("one tool output at the character cap, estimated", self.tool_output_tokens),
            *(
                [
                    ("delegations (a team's max_delegations)", self.delegations),
                    ("longest hand-off to a role, schemas included", self.handoff_tokens),
                ]
                if self.delegations
                else []
            ),
            ("turns that fit", self.turns_that_fit),
            ("turns asked for (max_assistant_turns)", self.max_turns),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"  {name.ljust(width)}  {cell(value)}" for name, value in rows)
