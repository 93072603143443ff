"""The name verl configurations use for the agent loop (`gaia_train.verl_agent.GaiaAgentLoop`), kept so
configs written before the trainer had rooms still load; the loop lives in
`gaia_train.verl_adapter.agent_loop`."""

from .verl_adapter.agent_loop import GaiaAgentLoop

__all__ = ["GaiaAgentLoop"]
