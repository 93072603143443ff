"""Which shell commands the terminal servers run: decided on parsed shell words, never substrings.

The sandbox is the real protection; the policy refuses what an agent should not try at all and
says which rule refused it. Every simple command in a pipeline or list (`;`, `&&`, `||`, `|`, `&`)
is checked by its program name, after leading `VAR=value` assignments and wrappers such as `env`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal, NamedTuple

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core.settings import settings

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
    """GAIA_TERMINAL_POLICY (denylist|allowlist), GAIA_TERMINAL_DENY, GAIA_TERMINAL_ALLOW (comma lists),
    GAIA_TERMINAL_MAX_TIMEOUT_S, GAIA_TERMINAL_MAX_COMMAND_BYTES."""

    model_config = SettingsConfigDict(env_prefix="GAIA_TERMINAL_", extra="ignore")

    policy: Literal["denylist", "allowlist"] = "denylist"
    deny: str = DEFAULT_DENY
    allow: str = DEFAULT_ALLOW
    max_timeout_s: int = 300
    """Upper bound on the timeout an agent may ask for."""
    max_command_bytes: int = Field(default=65_536, ge=1, le=131_071)
    """Longest command (UTF-8 bytes). Linux refuses a single argument of 128 KiB or more to `bash -c`."""


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str = ""


def _names(text: str) -> set[str]:
    return {name.strip() for name in text.split(",") if name.strip()}


def check_command(command: str) -> Verdict:
    """Allowed, or refused with the rule that refused it."""
    rules = settings(PolicySettings)
    if not command.strip():
        return Verdict(False, "the command is empty; pass a shell command such as `ls -la`")
    size = len(command.encode("utf-8", "surrogatepass"))
    if size > rules.max_command_bytes:
        return Verdict(
            False,
            f"rule length: the command is {size} bytes, over the limit of {rules.max_command_bytes} "
            "(GAIA_TERMINAL_MAX_COMMAND_BYTES); write a long script to a file in the workspace and run it",
        )
    try:
        tokens = shell_tokens(command)
    except ValueError as exc:
        return Verdict(False, f"the command does not parse as shell words ({exc}); check its quotes")
    deny, allow = _names(rules.deny), _names(rules.allow)
    for program, args in _simple_commands(tokens):
        name = PurePosixPath(program).name
        if rules.policy == "allowlist" and name not in allow:
            return Verdict(False, f"rule allowlist: `{name}` is not in GAIA_TERMINAL_ALLOW")
        if rules.policy == "denylist" and (name in deny or name.split(".")[0] in deny):
            return Verdict(False, f"rule deny:{name}: `{name}` is refused (GAIA_TERMINAL_DENY)")
        if name == "rm" and any(a in {"/", "/*", "~", "~/"} for a in args):
            return Verdict(False, "rule rm-root: removing / or the home directory is refused")
    return Verdict(True)


# One regex pass each for tokens and for a word's quotes: linear in the command's length (shlex
# grows each token a character at a time, quadratic on one long word). Possessive quantifiers
# keep a failed match (an unclosed quote) from backtracking.
_TOKEN = re.compile(
    r"""(?P<space>[ \t\r]++)
    |(?P<op>[;&|()\n]++)
    |(?P<word>(?:[^ \t\r\n'"\\;&|()]++|'[^']*+'|"[^"\\]*+(?:\\.[^"\\]*+)*+"|\\.)++)
    |(?P<unclosed>.)""",
    re.VERBOSE | re.DOTALL,
)
_PIECE = re.compile(r"""[^'"\\]++|'([^']*+)'|"((?:[^"\\]++|\\.)*+)"|\\(.)""", re.DOTALL)
_QUOTING = re.compile(r"""['"\\]""")
_DOUBLE_QUOTED_ESCAPE = re.compile(r'\\(["\\])')


class Token(NamedTuple):
    text: str
    operator: bool
    """`;`, `&&`, `|`, `(`, a newline...: a run of control characters outside quotes."""


def shell_tokens(command: str) -> list[Token]:
    """Words (quotes removed, POSIX rules) and control operators; ValueError on an unclosed quote."""
    tokens: list[Token] = []
    for match in _TOKEN.finditer(command):
        kind, text = match.lastgroup, match.group()
        if kind == "word":
            tokens.append(Token(_unquote(text) if _QUOTING.search(text) else text, False))
        elif kind == "op":
            tokens.append(Token(text, True))
        elif kind == "unclosed":
            raise ValueError("No escaped character" if text == "\\" else "No closing quotation")
    return tokens


def _unquote(word: str) -> str:
    parts: list[str] = []
    for piece in _PIECE.finditer(word):
        single, double, escaped = piece.groups()
        if single is not None:
            parts.append(single)
        elif double is not None:
            parts.append(_DOUBLE_QUOTED_ESCAPE.sub(r"\1", double))
        elif escaped is not None:
            parts.append(escaped)
        else:
            parts.append(piece.group())
    return "".join(parts)


def _simple_commands(tokens: list[Token]) -> list[tuple[str, list[str]]]:
    commands: list[tuple[str, list[str]]] = []
    current: list[str] = []
    for token in [*tokens, Token(";", True)]:
        if not token.operator:
            current.append(token.text)
            continue
        first = 0
        while first < len(current) and (_is_assignment(current[first]) or current[first] in WRAPPERS):
            first += 1
        if first < len(current):
            commands.append((current[first], current[first + 1 :]))
        current = []
    return commands


def _is_assignment(word: str) -> bool:
    return "=" in word and not word.startswith("=")
