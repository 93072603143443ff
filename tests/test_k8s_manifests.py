"""deploy/k8s against the Kubernetes schemas (kubernetes-validate: the API's schemas bundled, offline),
and the ingress rule against deploy/nginx/gaia-env.conf, the file tests/test_multi_replica.py runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from gaia_contract import GONE_UNREACHABLE, SESSION_GONE
from gaia_env import ops
from gaia_env.app import OPEN_PATHS

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "deploy" / "k8s"
NGINX = (ROOT / "deploy" / "nginx" / "gaia-env.conf").read_text()
CONTROLLER = "ingress-nginx-controller.yaml"
KUBERNETES = kubernetes_validate.latest_version()


def documents(name: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all((K8S / name).read_text()) if doc]


def manifests() -> list[str]:
    return sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def find(kind: str, name: str) -> dict:
    for file in manifests():
        for doc in documents(file):
            if doc["kind"] == kind and doc["metadata"]["name"] == name:
                return doc
    raise AssertionError(f"no {kind} {name} in deploy/k8s")


@pytest.mark.parametrize("file", manifests())
def test_every_manifest_is_valid_against_the_kubernetes_schemas(file: str) -> None:
    docs = documents(file)
    assert docs
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(
                f"{file}: {doc['kind']} {doc['metadata'].get('name')}: {exc.message} at {list(exc.path)}"
            )


def nginx_maps(text: str) -> list[str]:
    blocks = re.findall(r"map \$\w+ \$\w+ \{.*?\n\s*\}", text, re.S)
    return [" ".join(block.split()) for block in blocks]


def test_the_ingress_hashes_on_the_key_the_nginx_file_hashes_on() -> None:
    annotations = find("Ingress", "gaia-env")["metadata"]["annotations"]
    [hashed] = re.findall(r"^\s*hash (\S+) consistent;", NGINX, re.M)
    assert annotations["nginx.ingress.kubernetes.io/upstream-hash-by"] == hashed == "$gaia_session_key"
    [controller_map] = documents(CONTROLLER)
    assert controller_map["metadata"]["namespace"] == "ingress-nginx"  # the controller's, not gaia-env's
    controller = controller_map["data"]
    # The key's maps: the same text in the controller's http-snippet as in the nginx file.
    assert len(nginx_maps(NGINX)) == 2
    assert nginx_maps(controller["http-snippet"]) == nginx_maps(NGINX)
    assert controller["enable-underscores-in-headers"] == "true" and "underscores_in_headers on;" in NGINX
    # Streaming and long calls alike.
    assert (
        annotations["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
        and "proxy_buffering off;" in NGINX
    )
    timeout = annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]
    assert f"proxy_read_timeout {timeout}s;" in NGINX
    body = annotations["nginx.ingress.kubernetes.io/proxy-body-size"]
    assert f"client_max_body_size {body};" in NGINX


def test_the_probes_ask_the_gateways_health_and_readiness() -> None:
    [container] = find("Deployment", "gaia-env-gateway")["spec"]["template"]["spec"]["containers"]
    served = set(ops.routes_for(None))  # the operator paths the gateway serves
    liveness, readiness = container["livenessProbe"], container["readinessProbe"]
    # Alive: /health, which needs no token. Ready: /ready, with the token when one is set.
    assert liveness["httpGet"]["path"] == "/health" and "/health" in OPEN_PATHS & served
    assert container["startupProbe"]["httpGet"]["path"] == "/health"
    command = " ".join(readiness["exec"]["command"])
    assert "/ready" in served and "http://127.0.0.1:8080/ready" in command and "MCP_AUTH_TOKEN" in command
    assert "curl -fsS" in command  # -f: a 503 (not ready) fails the probe
    port = {p["name"]: p["containerPort"] for p in container["ports"]}["http"]
    assert f"--port {port}" in " ".join(container["command"])
    env = {e["name"]: e for e in container.get("env", [])}
    assert env["GAIA_REPLICA_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"


def test_when_no_replica_answers_nginx_answers_the_session_gone_error() -> None:
    [body] = re.findall(r"return 502 '(.*)';", NGINX)
    error = json.loads(body.replace("\\'", "'"))["error"]
    assert error["code"] == SESSION_GONE and error["data"]["reason"] == GONE_UNREACHABLE
    assert "start a new session" in error["message"]
    assert "error_page 502 503 504 = @replica_unreachable;" in NGINX
