"""`gaia-train`: dataset, demo-data, eval, check-env and check-config."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

import anyio

from .data import gaia as ds
from .data.tasks import TaskFileError, TaskSource
from .episode.loop import EpisodeLimits
from .episode.session import McpSettings
from .row import AGENT_NAME


def _size(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count or a fraction below 1, got {text!r}") from None


def _add_dataset(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dataset",
        help="turn a GAIA snapshot (and task files of other suites) into VeRL train.parquet and test.parquet",
    )
    p.add_argument(
        "--snapshot",
        type=Path,
        default=None,
        help="GAIA snapshot root: the folder holding 2023/validation and 2023/test",
    )
    p.add_argument(
        "--tasks",
        action="append",
        default=[],
        metavar="FILE[:WEIGHT]",
        help="a JSONL task file of another suite to mix in (repeatable); WEIGHT scales its share (default 1)",
    )
    p.add_argument(
        "--gaia-weight", type=float, default=1.0, help="the GAIA rows' share in the mix (default 1)"
    )
    p.add_argument(
        "--dataset-root",
        type=Path,
        default=None,
        help="the folder the environment serves as the dataset, which holds the task files' attachments "
        "(default: --snapshot, else the first task file's folder)",
    )
    p.add_argument("--out", type=Path, required=True, help="folder for train.parquet and test.parquet")
    p.add_argument(
        "--test-size",
        type=_size,
        default=0.2,
        help="held-out validation tasks: a fraction below 1 or a count (default 0.2)",
    )
    p.add_argument(
        "--train-size",
        type=_size,
        default=None,
        help="cap on training tasks: a fraction below 1 or a count (default: all the rest)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--agent-name",
        default=AGENT_NAME,
        help=f"VeRL agent loop of every row that names none (default {AGENT_NAME}; a team of agent.yaml, "
        "e.g. demo_team, plays the rows as a team)",
    )
    p.add_argument(
        "--mount",
        default=ds.DEFAULT_MOUNT,
        help=f"where the environment serves the snapshot root (default {ds.DEFAULT_MOUNT})",
    )
    p.add_argument(
        "--include-test-split",
        action="store_true",
        help="also write gaia_test_inference.parquet from 2023/test (answers hidden; inference only)",
    )
    p.add_argument(
        "--no-check-attachments",
        action="store_true",
        help="do not require every attachment to be present in the snapshot",
    )


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo-data", help="write a small GAIA-format snapshot whose answers need the tools")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl", help="metadata file format")
    p.add_argument(
        "--skip-audio", action="store_true", help="leave out the spoken-clip task (needs espeak-ng)"
    )


def _add_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="run the episode loop against an OpenAI-compatible endpoint")
    data = p.add_mutually_exclusive_group(required=True)
    data.add_argument("--data", type=Path, help="a parquet written by gaia-train dataset")
    data.add_argument(
        "--snapshot", type=Path, help="a GAIA snapshot root (e.g. from demo-data); every task of --split"
    )
    p.add_argument("--split", default="validation", help="split of --snapshot (default validation)")
    p.add_argument(
        "--agent-name",
        default=AGENT_NAME,
        help=f"who plays --snapshot's tasks (default {AGENT_NAME}, the single agent; a team's name, "
        "e.g. demo_team, plays them as that team)",
    )
    p.add_argument(
        "--team",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="a team file; rows whose agent_name is its name are played by it (repeatable; the shipped "
        "teams need none)",
    )
    p.add_argument(
        "--mount", default=ds.DEFAULT_MOUNT, help="dataset mount inside the environment, for --snapshot"
    )
    p.add_argument(
        "--out", type=Path, required=True, help="folder for trajectories.jsonl, summary.json, summary.png"
    )
    p.add_argument(
        "--base-url",
        default=os.environ.get("OPENAI_BASE_URL"),
        help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (OPENAI_BASE_URL)",
    )
    p.add_argument("--model", default=os.environ.get("OPENAI_MODEL"), help="model name (OPENAI_MODEL)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="variable holding the API key")
    p.add_argument(
        "--mcp-url", default=None, help="MCP endpoint (default MCP_SERVER_URL or http://127.0.0.1:8080/mcp)"
    )
    p.add_argument(
        "--servers", default=None, help="comma-separated server ids (default MCP_SERVERS, else all)"
    )
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    p.add_argument("--max-turns", type=int, default=32)
    p.add_argument("--max-parallel-calls", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=4096, help="completion tokens per turn")
    p.add_argument("--max-response-tokens", type=int, default=None, help="completion tokens per episode")
    p.add_argument("--temperature", type=float, default=None, help="default: the endpoint's")
    p.add_argument("--tool-timeout", type=float, default=120.0, help="seconds per tool call")
    p.add_argument("--episode-timeout", type=float, default=1800.0, help="seconds per episode")
    p.add_argument(
        "--max-tool-output", type=int, default=8192, help="characters of tool output shown to the model"
    )
    p.add_argument("--request-timeout", type=float, default=600.0, help="seconds per model request")
    p.add_argument("--retries", type=int, default=4, help="retries of a transient model error")
    p.add_argument("--no-progress", action="store_true")


def _cmd_dataset(args: argparse.Namespace) -> int:
    written = ds.build(
        args.snapshot,
        args.out,
        test_size=args.test_size,
        train_size=args.train_size,
        seed=args.seed,
        mount=args.mount,
        include_test_split=args.include_test_split,
        check_attachments=not args.no_check_attachments,
        task_sources=[TaskSource.parse(spec) for spec in args.tasks],
        gaia_weight=args.gaia_weight,
        dataset_root=args.dataset_root,
        agent_name=args.agent_name,
    )
    for name, path in written.items():
        import pandas as pd

        print(f"{name}: {path} ({len(pd.read_parquet(path, columns=['data_source']))} tasks)")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    # The demo is an optional room (GPU nodes install the trainer without it): imported for this command only.
    try:
        from .demo.snapshot import DemoDataError, write_demo_snapshot
    except ModuleNotFoundError as exc:
        raise ValueError(
            f"demo-data needs the trainer's demo extra ({exc.name} is not installed): "
            "pip install './trainer[demo]' from the checkout (the uv workspace installs it)"
        ) from None
    try:
        tasks = write_demo_snapshot(args.out, metadata_format=args.format, skip_audio=args.skip_audio)
    except DemoDataError as exc:
        print(f"gaia-train {args.command}: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {len(tasks)} validation tasks and the hidden-answer test split under {args.out / '2023'}")
    print(f"serve it with: gaia-env serve --dataset-dir {args.out}")
    return 0


def _eval_rows(args: argparse.Namespace) -> list[dict]:
    if args.data is not None:
        rows = ds.read_rows(args.data)
    else:
        tasks = ds.load_split(args.snapshot, args.split)
        rows = [ds.to_row(task, index, args.mount, args.agent_name) for index, task in enumerate(tasks)]
    if args.limit is not None:
        if args.limit < 1:
            raise ValueError(f"--limit must be at least 1, got {args.limit}")
        rows = rows[: args.limit]
    if not rows:
        raise ValueError("the dataset has no tasks")
    return rows


def _cmd_eval(args: argparse.Namespace) -> int:
    from .eval.evaluate import format_table, run_eval
    from .eval.openai_policy import EndpointSettings

    if not args.base_url:
        raise ValueError("--base-url (or OPENAI_BASE_URL) is required, e.g. http://127.0.0.1:8000/v1")
    endpoint = EndpointSettings(
        base_url=args.base_url,
        model=args.model or "",
        api_key=os.environ.get(args.api_key_env),
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        max_response_tokens=args.max_response_tokens,
        request_timeout_s=args.request_timeout,
        retries=args.retries,
    )
    mcp = McpSettings.from_env(
        url=args.mcp_url,
        servers=args.servers,
        call_timeout_s=args.tool_timeout,
        max_output_chars=args.max_tool_output,
    )
    limits = EpisodeLimits(
        max_turns=args.max_turns,
        max_parallel_calls=args.max_parallel_calls,
        episode_timeout_s=args.episode_timeout,
    )
    rows = _eval_rows(args)
    report = anyio.run(
        lambda: run_eval(
            rows,
            args.out,
            endpoint,
            mcp,
            limits,
            concurrency=args.concurrency,
            progress=not args.no_progress,
            team_files=args.team,
        )
    )
    print(format_table(report.summary))
    print(f"ran {report.ran}, resumed past {report.skipped}; results in {args.out}")
    if report.failed:
        print(
            f"{len(report.failed)} episode(s) were ended by the environment or the model endpoint, not by "
            f"the agent (see {args.out / 'errors.jsonl'}); first: {report.failed[0]['error']}. "
            "Run the same command again to retry them.",
            file=sys.stderr,
        )
        return 2
    return 0


def _cmd_check_env(args: argparse.Namespace) -> int:
    import json

    from .environment import EnvironmentUnavailable, describe, mcp_config

    settings = McpSettings.from_env(url=args.mcp_url, servers=args.servers)
    try:
        report = anyio.run(lambda: describe(settings, sample_call=not args.no_call))
    except EnvironmentUnavailable as exc:
        print(f"gaia-train check-env: {exc}", file=sys.stderr)
        return 1
    print("\n".join(report.lines()))
    if args.mcp_config:
        config = mcp_config(settings)
        for server in config["mcpServers"].values():  # the token stays out of what is printed
            if "Authorization" in server["headers"]:
                server["headers"]["Authorization"] = "Bearer $MCP_AUTH_TOKEN"
        print(json.dumps(config, indent=2))
    return 0 if report.sample_ok or report.sample_tool is None else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaia-train", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the loop does")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_dataset(sub)
    _add_demo(sub)
    _add_eval(sub)
    env = sub.add_parser(
        "check-env", help="what the agent will see at MCP_SERVER_URL: servers, tool counts, one sample call"
    )
    env.add_argument("--mcp-url", default=None, help="default MCP_SERVER_URL or http://127.0.0.1:8080/mcp")
    env.add_argument(
        "--servers", default=None, help="comma-separated server ids (default MCP_SERVERS, else all)"
    )
    env.add_argument("--no-call", action="store_true", help="list only; do not try a sample call")
    env.add_argument(
        "--mcp-config", action="store_true", help="also print the MCP client configuration (JSON)"
    )
    check = sub.add_parser("check-config", help="compose and validate VeRL's config with overrides (no GPU)")
    check.add_argument("--print", action="store_true", help="print the composed config")
    check.add_argument(
        "--gpu-memory-gb", type=float, default=80.0, help="one GPU's memory the actor's estimate must fit in"
    )
    check.add_argument("overrides", nargs="*", help="Hydra overrides, as for verl.trainer.main_ppo")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    if not args.verbose:
        # The MCP SDK logs every HTTP request at INFO.
        logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        if args.command == "dataset":
            return _cmd_dataset(args)
        if args.command == "demo-data":
            return _cmd_demo(args)
        if args.command == "eval":
            return _cmd_eval(args)
        if args.command == "check-env":
            return _cmd_check_env(args)
        from .verl_adapter.config_check import main as check_main

        memory = ["--gpu-memory-gb", str(args.gpu_memory_gb)]
        return check_main((["--print"] if args.print else []) + memory + args.overrides)
    except (ds.DatasetError, TaskFileError, ValueError, FileNotFoundError) as exc:
        print(f"gaia-train {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
