"""media-video-server: keyframe extraction time for a 5-minute 720p test video, through the real server.

    uv run --no-sync python -m benchmarks.video_keyframes [--minutes 5] [--cut-every 10] [--runs 2]

The video is made here with ffmpeg's test sources (testsrc2, smptehdbars, rgbtestsrc, yuvtestsrc in
turn, a hard cut every --cut-every seconds), 1280x720 at 25 fps, H.264. extract_keyframes then covers
the whole video in one window (target_time at the middle, window_size the length) over the MCP
protocol (in-process client):

- scene mode: ffmpeg decodes the window and scores scene changes, then seeks to the strongest ones
  (VIDEO_MAX_KEYFRAMES, 20) and saves them. Every kept frame must lie on a cut (within 0.1 s).
- uniform mode: 20 frames evenly spaced, each taken by seeking (no full decode).

Times are wall-clock seconds per call, and the CPU seconds ffmpeg used for it (user + system of the
finished child processes): on a shared machine the wall clock swings with the other jobs, the CPU
time much less. The ratio is the best call time over the video's length.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from mcp import Client

SOURCES = ["testsrc2", "smptehdbars", "rgbtestsrc", "yuvtestsrc"]


def make_video(target: Path, seconds: int, cut_every: int) -> list[float]:
    count = seconds // cut_every
    inputs: list[str] = []
    for i in range(count):
        inputs += ["-f", "lavfi", "-i", f"{SOURCES[i % len(SOURCES)]}=s=1280x720:r=25:d={cut_every}"]
    joined = "".join(f"[{i}:v]" for i in range(count)) + f"concat=n={count}:v=1:a=0"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", *inputs, "-filter_complex", joined,
         "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "veryfast", str(target)],
        check=True,
    )  # fmt: skip
    return [float(i * cut_every) for i in range(1, count)]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--cut-every", type=int, default=10)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    seconds = int(args.minutes * 60)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "workspaces" / "bench"
        workspace.mkdir(parents=True)
        os.environ["GAIA_WORKSPACE_ROOT"] = str(root / "workspaces")
        started = time.perf_counter()
        cuts = make_video(workspace / "long.mp4", seconds, args.cut_every)
        made = time.perf_counter() - started
        from gaia_contract import SESSION_ID_KEY, WORKSPACE_KEY
        from media_video_server.server import server

        meta = {SESSION_ID_KEY: "bench", WORKSPACE_KEY: str(workspace)}
        base = {
            "video_path": "long.mp4",
            "target_time": seconds // 2,
            "window_size": seconds,
            "output_format": "json",
        }
        cases = [("scene", {"mode": "scene"}), ("uniform", {"mode": "uniform"})]
        results = []
        async with Client(server) as client:
            for name, extra in cases:
                times, cpu = [], []
                for _ in range(args.runs):
                    begun, used = time.perf_counter(), _children_cpu()
                    result = await client.call_tool("extract_keyframes", {**base, **extra}, meta=meta)
                    times.append(time.perf_counter() - begun)
                    cpu.append(_children_cpu() - used)
                    text = result.content[0].text
                    if result.is_error:
                        raise SystemExit(f"{name}: {text}")
                frames = json.loads(text)["frames"]
                if extra["mode"] == "scene":
                    off = [f["time"] for f in frames[1:] if min(abs(f["time"] - c) for c in cuts) > 0.1]
                    if off or len(frames) < 2:
                        raise SystemExit(f"{name}: frames off the cuts: {off}")
                best = min(times)
                results.append(
                    {"mode": name, "frames": len(frames), "seconds": [round(t, 2) for t in times],
                     "ffmpeg_cpu_seconds": [round(c, 2) for c in cpu],
                     "ratio_to_length": round(best / seconds, 4)}
                )  # fmt: skip
        print(json.dumps({"video_seconds": seconds, "cuts": len(cuts), "generate_seconds": round(made, 1),
                          "cpus": os.cpu_count(), "results": results}, indent=2))  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
