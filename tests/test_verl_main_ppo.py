"""verl's own trainer on this CPU: `verl.trainer.main_ppo` through `trainer/scripts/run.sh`, real gateway.

A real `gaia-env serve` (the csv and docx servers) serves the demo data; a tiny model is built on the
spot, warm-started on scripted episodes through it and saved as a Hugging Face folder; then run.sh with
DEVICE=cpu starts verl 0.9.1's default (v1) trainer: Ray, the task runner, TransferQueue, the FSDP actor
(gloo), the agent-loop manager playing `gaia_agent` episodes, the transformers rollout engine, the
reward loop with `gaia_train.reward`, GRPO advantages, the actor update and the weight sync, for three
steps, then one validation. Checked from the outside: the policy's own episodes called tools that the
gateway served (counted after the warm start) and some earned a reward; verl logged three steps with
a reward, actor losses and multi-turn episodes, and printed them on its console; verl's episode dumps
hold the real tool output the policy read; validation reports the gaia metrics per data_source.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from gaia_kit_testing.gateway import launch
from gaia_train.demo import verl_cpu, warm_start
from gaia_train.demo.snapshot import write_demo_snapshot

pytest.importorskip("verl", reason="verl's trainer needs scripts/trainer-extra.sh (make test runs it)")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

STEPS = 3
RUN_SH = Path(__file__).resolve().parents[1] / "trainer" / "scripts" / "run.sh"


def test_main_ppo_trains_grpo_steps_on_cpu_through_the_gateway(tmp_path: Path) -> None:
    import httpx

    demo = tmp_path / "demo"
    write_demo_snapshot(demo, skip_audio=True)
    (tmp_path / "gw").mkdir()
    gateway = launch(tmp_path / "gw", "--servers", warm_start.SERVERS, dataset_dir=demo)
    ray_dir = verl_cpu.ray_tmpdir()
    try:
        work = tmp_path / "run"
        work.mkdir()
        inputs = verl_cpu.prepare(work, demo, gateway.url)
        before = verl_cpu.served_tool_calls(httpx.get(gateway.base + "/metrics").text)
        metrics_file = work / "verl-metrics.jsonl"
        python = verl_cpu.python_without(tmp_path / "python")
        env = verl_cpu.main_ppo_env(inputs, gateway.url, STEPS, metrics_file, python, ray_dir)
        log_path = work / "main_ppo.log"
        proc = verl_cpu.run_main_ppo(RUN_SH, env, log_path, timeout=1100)
        log_text = log_path.read_text(errors="replace")
        assert proc.returncode == 0, log_text[-6000:]
        after = verl_cpu.served_tool_calls(httpx.get(gateway.base + "/metrics").text)
    finally:
        gateway.stop()
        shutil.rmtree(ray_dir, ignore_errors=True)

    steps = verl_cpu.read_metrics(metrics_file)
    assert [s["step"] for s in steps] == list(range(1, STEPS + 1)), log_text[-3000:]
    rollouts_dir, validation_dir = verl_cpu.dump_dirs(metrics_file)
    rollouts, validation = verl_cpu.read_dump(rollouts_dir), verl_cpu.read_dump(validation_dir)
    assert sorted(rollouts) == list(range(1, STEPS + 1))
    outputs = [e["output"] for step in rollouts.values() for e in step]
    assert len(outputs) == STEPS * 3 * verl_cpu.GROUP
    # The policy's own calls reached the gateway: the warm start's were counted before main_ppo began.
    served = after - before
    assert served > 0, f"no tool call of the policy reached the gateway; episodes: {outputs[:2]!r}"
    for step in steps:
        data = step["data"]
        # The reward function's scores, as verl's reward loop computed them for the step's episodes.
        assert 0.0 <= data["critic/score/mean"] <= 1.0
        assert data["critic/score/min"] <= data["critic/score/mean"] <= data["critic/score/max"]
        # The actor's update ran: a policy loss and a gradient norm from FSDP's backward pass. GRPO's
        # advantages are zero in a group whose rewards are all equal; with mixed rewards the gradient is not.
        assert "actor/pg_loss" in data and data["actor/grad_norm"] >= 0
        if data["critic/score/min"] < data["critic/score/max"]:
            assert data["actor/grad_norm"] > 0
        assert data["timing_s/step"] > 0
        # One batch is every demo task, GROUP episodes each; verl counts the sampled responses.
        assert data["response_length/mean"] > 0
    # The agent loop played multi-turn episodes: a call, the tool's response, another turn.
    assert max(step["data"]["num_turns/max"] for step in steps) > 2
    # One validation after the last step: the reward's gaia keys per data_source (one per GAIA level),
    # and in verl's validation dump for each episode.
    last = steps[-1]["data"]
    for key in ("gaia_stop", "gaia_tool_calls", "gaia_tool_errors", "gaia_env_fault"):
        assert any(re.fullmatch(rf"val-aux/gaia/level\d/{key}/mean@1", k) for k in last), sorted(last)
    assert any(re.fullmatch(r"val-core/gaia/level\d/acc/mean@1", k) for k in last), sorted(last)
    [episodes] = validation.values()
    assert len(episodes) == 3 and all(
        {"gaia_stop", "gaia_tool_calls", "gaia_env_fault"} <= set(e) for e in episodes
    )
    first, last = inputs.warm_start_loss
    print(
        f"tool calls the gateway served during main_ppo: {served:g} (warm-start loss {first:.2f} -> {last:.3f})"
    )
    # verl's console logger printed the same steps.
    assert re.search(rf"step:{STEPS} - .*critic/score/mean:", log_text), log_text[-3000:]
    # What the tiny warm-started model learned: verl's dump of every training episode (decoded). The real
    # server's output in some responses (its header, "# CSV: <file>") shows what the policy read came
    # from the tool; a score above 0 shows GRPO had something to learn from.
    assert any("<tool_response>\n# CSV: " in o for o in outputs), outputs[:3]
    assert max(step["data"]["critic/score/max"] for step in steps) > 0, outputs[:3]
    assert any(e["score"] > 0 for step in rollouts.values() for e in step)
