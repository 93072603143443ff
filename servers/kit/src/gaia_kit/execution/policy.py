"""Which shell commands the terminal servers run: decided on parsed shell words, never substrings.

The sandbox is the real protection; the policy refuses what an agent should not try at all and
says which rule refused it. Every simple command in a pipeline or list (`;`, `&&`, `||`, `|`, `&`)
is checked by its program name, after leading `VAR=value` assignments and wrappers such as `env`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Literal

from pydantic_settings import BaseSettings, SettingsConfigDict

SEPARATORS = {";", "&&", "||", "|", "&", "|&", ";;", "(", ")", "\n"}
WRAPPERS = {"env", "nice", "nohup", "time", "timeout", "stdbuf", "command", "exec", "xargs"}
DEFAULT_DENY = (
    "sudo,su,doas,shutdown,reboot,halt,poweroff,init,systemctl,service,mount,umount,"
    "mkfs,fdisk,parted,mkswap,swapon,swapoff,insmod,rmmod,modprobe,chroot,nsenter,iptables"
)
DEFAULT_ALLOW = (
    "python,python3,pip,node,npm,npx,bash,sh,ls,cat,head,tail,wc,grep,egrep,sed,awk,sort,uniq,cut,"
    "tr,find,echo,printf,pwd,cd,mkdir,touch,cp,mv,rm,diff,file,stat,du,df,date,jq,tar,gzip,gunzip,"
    "zip,unzip,xxd,od,base64,md5sum,sha256sum,seq,true,false,test,[,which,env,ffmpeg,tesseract"
)


class PolicySettings(BaseSettings):
    """GAIA_TERMINAL_POLICY (denylist|allowlist), GAIA_TERMINAL_DENY, GAIA_TERMINAL_ALLOW (comma lists)."""

    model_config = SettingsConfigDict(env_prefix="GAIA_TERMINAL_", extra="ignore")

    policy: Literal["denylist", "allowlist"] = "denylist"
    deny: str = DEFAULT_DENY
    allow: str = DEFAULT_ALLOW
    max_timeout_s: int = 300
    """Upper bound on the timeout an agent may ask for."""


@lru_cache(maxsize=1)
def get_policy_settings() -> PolicySettings:
    return PolicySettings()


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str = ""


def _names(text: str) -> set[str]:
    return {name.strip() for name in text.split(",") if name.strip()}


def check_command(command: str) -> Verdict:
    """Allowed, or refused with the rule that refused it."""
    settings = get_policy_settings()
    if not command.strip():
        return Verdict(False, "the command is empty; pass a shell command such as `ls -la`")
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()\n")
        lexer.whitespace_split = True
        lexer.commenters = ""
        words = list(lexer)
    except ValueError as exc:
        return Verdict(False, f"the command does not parse as shell words ({exc}); check its quotes")
    deny, allow = _names(settings.deny), _names(settings.allow)
    for program, args in _simple_commands(words):
        name = PurePosixPath(program).name
        if settings.policy == "allowlist" and name not in allow:
            return Verdict(False, f"rule allowlist: `{name}` is not in GAIA_TERMINAL_ALLOW")
        if settings.policy == "denylist" and (name in deny or name.split(".")[0] in deny):
            return Verdict(False, f"rule deny:{name}: `{name}` is refused (GAIA_TERMINAL_DENY)")
        if name == "rm" and any(a in {"/", "/*", "~", "~/"} for a in args):
            return Verdict(False, "rule rm-root: removing / or the home directory is refused")
    return Verdict(True)


def _simple_commands(words: list[str]) -> list[tuple[str, list[str]]]:
    commands: list[tuple[str, list[str]]] = []
    current: list[str] = []
    for word in [*words, ";"]:
        if word in SEPARATORS or set(word) <= set(";&|()\n"):
            while current and (
                "=" in current[0] and not current[0].startswith("=") or current[0] in WRAPPERS
            ):
                current.pop(0)
            if current:
                commands.append((current[0], current[1:]))
            current = []
        else:
            current.append(word)
    return commands
