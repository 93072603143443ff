"""The VeRL 0.9 agent loop: the shared episode loop over a token tape, registered as `gaia_agent`.

VeRL builds one instance per trajectory (hydra.utils.instantiate from agent.yaml) and awaits
`run(sampling_params, **row)`. Settings, first match wins: agent.yaml keys, then environment
variables (MCP_SERVER_URL, MCP_SERVERS, MCP_AUTH_TOKEN, GAIA_TOOL_TIMEOUT_S,
GAIA_EPISODE_TIMEOUT_S, GAIA_TURN_TOKENS, GAIA_TOOL_TOKENS_PER_TURN, GAIA_REASONING_TOKENS), then the
rollout config (multi_turn.max_assistant_turns, max_parallel_calls, max_tool_response_length) and
defaults (`episode.budget`).

With `team` (a team file or the name of a shipped one, see `gaia_train.teams.team`) the loop plays that team
instead: every role on the one token tape, so the trajectory VeRL trains on holds every role's
sampled tokens with mask 1 (see `gaia_train.teams.delegation`). agent.yaml registers one entry per team,
named as the rows' `agent_name`.

The episode's own final answer goes to the reward as `extra_fields["gaia_answer"]` (VeRL's naive
reward manager merges extra_fields into the reward function's extra_info), so what is scored is what
the agent answered, not an `<answer>` tag that a tool's output or its reasoning happened to hold.

An episode the environment ended (`Stop.ENVIRONMENT_FAULT`: no session could be opened, the transport
failed, the gateway stayed busy past a call's deadline, the session's replica is gone) is returned,
never raised (an exception in `run()` fails the trajectory's whole GRPO group), with
`extra_fields["gaia_env_fault"] = 1` (0 for every other episode) and an all-zero response mask: VeRL's
losses skip a fully masked sequence, so it carries no gradient. Its reward still counts in its group's
mean and standard deviation (verl 0.9.1's GRPO estimator groups every sample of a prompt, masked or
not); docs/trainer.md says what that does to the other samples' advantages.
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from ..episode.budget import DEFAULT_REASONING_TOKENS
from ..episode.loop import EpisodeLimits, EpisodeResult
from ..episode.session import McpSettings
from ..episode.tokens import TokenPolicy, TokenTape, off_loop
from ..play import play
from ..reward import ANSWER_KEY
from ..teams.delegation import TeamResult
from ..teams.team import Team, load_team

log = logging.getLogger(__name__)

DEFAULT_MAX_TURNS = 32
SMALL_TOOL_OUTPUT = 1024
ENV_FAULT_KEY = "gaia_env_fault"
"""extra_fields key: 1 when the environment ended the episode (no gradient, counted apart), else 0."""


def _env_float(name: str) -> float | None:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {value!r}") from None


def env_tokens(name: str) -> int | None:
    """A token count from the environment (GAIA_TURN_TOKENS, GAIA_TOOL_TOKENS_PER_TURN); None when unset."""
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        tokens = int(value)
    except ValueError:
        raise ValueError(f"{name} must be a whole number of tokens, got {value!r}") from None
    if tokens < 1:
        raise ValueError(f"{name} must be at least 1, got {tokens}")
    return tokens


@register("gaia_agent")
class GaiaAgentLoop(AgentLoopBase):
    def __init__(
        self,
        *args: Any,
        mcp_server_url: str | None = None,
        mcp_servers: str | None = None,
        tool_timeout_s: float | None = None,
        episode_timeout_s: float | None = None,
        turn_tokens: int | None = None,
        tool_tokens_per_turn: int | None = None,
        reasoning_tokens: int | None = None,
        team: str | None = None,
        **kwargs: Any,
    ):
        # VeRL hands every agent loop its own tool list; this loop's tools come from MCP.
        kwargs.pop("tools", None)
        super().__init__(*args, **kwargs)
        multi_turn = self.rollout_config.multi_turn
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)
        max_output = int(multi_turn.max_tool_response_length)
        if max_output < SMALL_TOOL_OUTPUT:
            log.warning(
                "actor_rollout_ref.rollout.multi_turn.max_tool_response_length=%d cuts documents short; "
                "gaia recipes use 8192 or more",
                max_output,
            )
        self.limits = EpisodeLimits(
            max_turns=int(multi_turn.max_assistant_turns or DEFAULT_MAX_TURNS),
            max_parallel_calls=int(multi_turn.max_parallel_calls or 1),
            episode_timeout_s=episode_timeout_s or _env_float("GAIA_EPISODE_TIMEOUT_S") or 1800.0,
        )
        self.turn_tokens = turn_tokens or env_tokens("GAIA_TURN_TOKENS")
        self.tool_tokens = tool_tokens_per_turn or env_tokens("GAIA_TOOL_TOKENS_PER_TURN")
        self.reasoning_tokens = (
            reasoning_tokens or env_tokens("GAIA_REASONING_TOKENS") or DEFAULT_REASONING_TOKENS
        )
        # Every trajectory of a batch carries log-probs or none does: VeRL concatenates them.
        self.log_probs = bool(self.rollout_config.get("calculate_log_probs", False))
        self.mcp = McpSettings.from_env(
            url=mcp_server_url,
            servers=mcp_servers,
            call_timeout_s=tool_timeout_s or _env_float("GAIA_TOOL_TIMEOUT_S"),
            max_output_chars=max(max_output, 100),
        )
        self.team: Team | None = load_team(team) if team else None

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        if "raw_prompt" not in kwargs:
            raise ValueError("the dataset row has no raw_prompt; set data.return_raw_chat=True")
        messages = [dict(m) for m in kwargs["raw_prompt"]]
        request_id = uuid.uuid4().hex
        tape = TokenTape(
            self.tokenizer,
            self.response_length,
            self.prompt_length,
            dict(self.apply_chat_template_kwargs or {}),
        )
        server_fields: dict[str, Any] = {}

        async def generate_ids(
            prompt_ids: list[int], max_tokens: int
        ) -> tuple[list[int], list[float] | None]:
            output = await self.server_manager.generate(
                request_id=request_id,
                prompt_ids=prompt_ids,
                sampling_params={**sampling_params, "max_tokens": max_tokens},
            )
            # Partial-rollout bookkeeping from the server: the first answer's fields, with
            # the latest max_global_steps, as VeRL's own tool loop keeps them.
            if not server_fields:
                server_fields.update(output.extra_fields)
            elif "max_global_steps" in output.extra_fields:
                server_fields["max_global_steps"] = output.extra_fields["max_global_steps"]
            return list(output.token_ids), output.log_probs

        def new_policy() -> TokenPolicy:
            return TokenPolicy(
                tape,
                generate_ids,
                turn_tokens=self.turn_tokens,
                tool_tokens=self.tool_tokens,
                reasoning_tokens=self.reasoning_tokens,
            )

        result, team = await play(
            messages, new_policy, self.mcp, self.limits, self.team, kwargs.get("extra_info")
        )
        if result.environment_fault and not tape.prompt_ids:
            # No session, so no tool schemas: the row's prompt alone (the sequence is masked out anyway).
            await off_loop(_prompt_without_tools, tape, messages)
        return self._output(tape, result, server_fields, team)

    def _output(
        self,
        tape: TokenTape,
        result: EpisodeResult,
        server_fields: dict[str, Any],
        team: TeamResult | None = None,
    ) -> AgentLoopOutput:
        metrics = result.metrics
        handoffs = len(team.delegations) if team else 0
        response_ids, response_mask, logprobs = tape.response_ids, tape.response_mask, tape.response_logprobs
        if result.environment_fault:
            if not response_ids:  # VeRL wants at least one response token: a masked end-of-turn
                response_ids = [self.tokenizer.eos_token_id or self.tokenizer.pad_token_id or 0]
                logprobs = []
            response_mask = [0] * len(response_ids)
            if self.log_probs and not logprobs:
                logprobs = [0.0] * len(response_ids)
        extra_fields = {
            **server_fields,
            "turn_scores": [],
            "tool_rewards": [],
            ANSWER_KEY: result.answer,
            # Read by dense_reward_func through extra_info, and handy in rollout dumps.
            "gaia_tool_calls": metrics.total_tool_calls,
            "gaia_tool_errors": metrics.tool_errors,
            "gaia_turns": metrics.turns,
            # What the episode cost on paid backends and how often the benchmark-copy guard withheld a result.
            "gaia_cost_usd": metrics.cost_usd,
            "gaia_withheld": metrics.withheld,
            "gaia_stop": str(result.stop),
            # Every row has the same keys (VeRL concatenates the workers' batches), teams or not.
            "gaia_team": team.team if team else "",
            "gaia_delegations": handoffs,
            ENV_FAULT_KEY: int(result.environment_fault),
        }
        if result.environment_fault:
            log.warning("episode ended by the environment (no gradient): %s", result.error)
        return AgentLoopOutput(
            prompt_ids=tape.prompt_ids,
            response_ids=response_ids,
            response_mask=response_mask,
            response_logprobs=logprobs or None,
            # the user turn, every assistant turn, every turn of tool responses, every hand-off
            num_turns=1 + metrics.turns + metrics.tool_turns + handoffs,
            metrics={"generate_sequences": metrics.model_seconds, "tool_calls": metrics.tool_seconds},
            extra_fields=extra_fields,
        )


def _prompt_without_tools(tape: TokenTape, messages: list[dict[str, Any]]) -> None:
    ids = tape._encode(tape._render(messages, []))
    tape.prompt_ids = ids[-tape.max_prompt_length :] if tape.max_prompt_length else ids
