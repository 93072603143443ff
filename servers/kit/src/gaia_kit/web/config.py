"""The outbound client's settings (GAIA_HTTP_* variables) and the User-Agent it sends."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import cache_dir

CacheMode = Literal["off", "read-write", "replay"]


def _default_cache_path() -> Path:
    return cache_dir() / "http-cache.sqlite"


class HttpSettings(BaseSettings):
    """GAIA_HTTP_* variables; see docs/configuration.md, "Outbound HTTP"."""

    model_config = SettingsConfigDict(env_prefix="GAIA_HTTP_", extra="ignore")

    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0
    """Longest silence while waiting for the answer or the next chunk of it."""
    total_timeout_s: float = 120.0
    """Deadline for one call, retries and redirects included."""
    retries: int = 3
    backoff_base_s: float = 0.5
    max_retry_after_s: float = 60.0
    """A Retry-After longer than this fails the call at once instead of waiting."""
    max_redirects: int = 5
    max_bytes: int = 50 * 1024 * 1024
    per_host_limit: int = 8
    host_limits: str = (
        "*.wikipedia.org=1,*.wikimedia.org=1,*.wiktionary.org=1,export.arxiv.org=1,"
        "archive.org=2,*.archive.org=2"
    )
    """Concurrent requests per process for these hosts (`*.` matches subdomains, which share one limit)."""
    host_intervals: str = "export.arxiv.org=3"
    """Seconds between the starts of two requests to these hosts (arXiv asks for 3)."""
    ca_bundle: Path | None = None
    """PEM file of certificate authorities to trust instead of the system's (a private CA)."""
    allow: str = ""
    """Hosts, addresses and CIDRs the SSRF guard lets through, comma-separated."""
    contact: str = ""
    """A URL or e-mail address put in the User-Agent, as Wikimedia's policy asks."""
    cache_mode: CacheMode = "read-write"
    cache_path: Path = Field(default_factory=_default_cache_path)
    cache_max_file_bytes: int = 20 * 1024 * 1024
    """Downloads (HttpClient.download) larger than this are not recorded, so replay misses them."""
    cache_ttl_s: float = 7 * 24 * 3600
    """Age after which read-write mode fetches again; 0 keeps entries forever. Replay ignores it."""
    cache_url: str = ""
    """redis://host:6379/0 keeps the cache in Redis, shared by gateways on many machines, instead of cache_path."""

    @property
    def attempts(self) -> int:
        return self.retries + 1


def host_numbers(text: str, variable: str) -> dict[str, float]:
    """`host=number,...` as a dict; a malformed entry names the variable to fix."""
    pairs: dict[str, float] = {}
    for part in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = part.partition("=")
        try:
            pairs[name.strip().lower()] = float(value)
        except ValueError:
            raise ToolFailure(
                f"{variable} has a malformed entry {part!r}; write host=number, comma-separated."
            ) from None
    return pairs


def user_agent(contact: str = "") -> str:
    try:
        version = metadata.version("gaia-kit")
    except metadata.PackageNotFoundError:
        version = "0"
    about = f"+{contact}" if contact else "MCP tool environment for LLM agents"
    return f"gaia-env/{version} ({about})"
