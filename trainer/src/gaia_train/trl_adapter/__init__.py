"""The TRL adapter: a `rollout_func` for TRL's GRPOTrainer over the episode loop, and its sampler."""
