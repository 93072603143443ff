"""Each server process sees only what it serves, as an unprivileged user (issue 22).

A server runs in its own mount, PID, IPC and UTS namespaces (bubblewrap) that show: the checkout
and the Pythons it runs from, /usr, a few files of /etc, the workspace root read-write, the dataset
read-only, the HTTP cache folder, model files named in the environment, a fresh /proc of its own
PID namespace, /dev, and a private /tmp (on disk under $TMPDIR/gaia-env-servers-*, removed when it
exits) that is also its $HOME.
Nothing else of the host: no /root, no other process's /proc, no /etc/shadow.

Who it runs as:
- gateway not root (the image runs as uid 10001): bubblewrap makes a user namespace; the server
  keeps the gateway's uid and no capability.
- gateway root (CI, a bare host): the server drops to GAIA_SERVER_UID (default 65534:65534,
  nobody). bubblewrap cannot do both: a user namespace made by root still maps to uid 0 on the
  host, and a namespace made after dropping could not mount host folders the new uid cannot
  reach (a Python under /root, pytest's 0700 temporary folders). So root's bubblewrap mounts the
  view without a user namespace, a two-line shell mounts /proc itself (bubblewrap's own /proc has
  read-only covers over /proc/sys and others, which would forbid the code sandbox nested in the
  server from mounting a /proc: "Can't mount proc"), then setpriv drops to the uid with every
  capability gone and no_new_privs set. The gateway hands the uid the workspace root, each new
  workspace and the HTTP cache folder.

GAIA_SERVER_CONFINE=0 runs servers as plain subprocesses, for platforms without namespaces.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gaia_kit.execution.sandbox import root_program_dirs

CONFINE_ENV = "GAIA_SERVER_CONFINE"
UID_ENV = "GAIA_SERVER_UID"
DEFAULT_UID = 65534
OFF = {"0", "false", "no", "off"}

# What a server may see of /etc: name resolution, certificates, locale, fonts, MIME and file types,
# the Debian alternatives (soffice, ...) and the configuration Chromium and LibreOffice read.
ETC_ENTRIES = (
    "alternatives", "ca-certificates", "ca-certificates.conf", "chromium", "chromium.d", "fonts", "gai.conf",
    "group", "host.conf", "hostname", "hosts", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "libreoffice",
    "localtime", "magic", "magic.mime", "mailcap", "mime.types", "nsswitch.conf", "os-release", "passwd",
    "protocols", "python3", "python3.11", "resolv.conf", "services", "ssl", "timezone", "xdg",
    "ImageMagick-6", "java-17-openjdk", "machine-id",
)  # fmt: skip
# Files and folders servers read when the environment names them (models, indexes, certificates).
READ_ONLY_PATH_VARS = (
    "GAIA_CORPUS_PATH", "AUDIO_WHISPER_MODEL_DIR", "GAIA_CHROMIUM_PATH", "GAIA_HTTP_CA_BUNDLE",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "WIKI_ZIM_PATH", "XAUTHORITY",
)  # fmt: skip
PROBE = (
    "import json, os, sys; root, dataset = sys.argv[1:3]; problems = []\n"
    "if not os.access(root, os.W_OK | os.X_OK): problems.append(f'cannot write the workspace root {root}')\n"
    "if dataset and not os.access(dataset, os.R_OK | os.X_OK):"
    " problems.append(f'cannot read the dataset {dataset}: make it readable by uid {os.getuid()}"
    " (chmod -R o+rX), or set GAIA_SERVER_UID to a user that can read it')\n"
    "print(json.dumps({'uid': os.getuid(), 'problems': problems}))"
)


class ConfinementUnavailable(RuntimeError):
    """Confinement was asked for (the default) and cannot be had here; the message says what to do."""


@dataclass(frozen=True)
class Launch:
    """How to start one server: its argv and environment, and the private folder to remove after it."""

    argv: list[str]
    env: dict[str, str]
    private: Path | None = None

    def cleanup(self) -> None:
        if self.private is not None:
            shutil.rmtree(self.private, ignore_errors=True)


@dataclass(frozen=True)
class Bind:
    source: Path
    dest: Path
    writable: bool = False


@dataclass(frozen=True)
class Confinement:
    workspace_root: Path
    dataset: Path | None
    drop_to: tuple[int, int] | None
    """(uid, gid) the server drops to when the gateway runs as root; None: it keeps the gateway's uid."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Confinement | None:
        """The confinement the gateway's server environment asks for; None when GAIA_SERVER_CONFINE=0."""
        if env.get(CONFINE_ENV, "1").strip().lower() in OFF:
            return None
        root = Path(os.path.realpath(env.get("GAIA_WORKSPACE_ROOT") or tempfile.gettempdir()))
        dataset = env.get("GAIA_DATASET_DIR")
        real = Path(os.path.realpath(dataset)) if dataset else None
        drop_to = _server_ids(env.get(UID_ENV, "")) if os.geteuid() == 0 else None
        return cls(root, real if real is not None and real.is_dir() else None, drop_to)

    @property
    def private_base(self) -> Path:
        """Where the servers' private /tmp folders live: one folder per workspace root, so the
        gateway that owns the root can remove what a killed run left."""
        digest = hashlib.sha256(str(self.workspace_root).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"gaia-env-servers-{digest}"

    def forget_private_base(self) -> None:
        """Remove the folder of private /tmp folders once its servers are gone (if it is empty)."""
        with contextlib.suppress(OSError):
            self.private_base.rmdir()

    # -- the host side ------------------------------------------------------------------------

    def hand_over(self, path: Path) -> None:
        """Make a folder the gateway created (a workspace, the root's quota folders) the servers'."""
        if self.drop_to is not None:
            os.chown(path, *self.drop_to, follow_symlinks=False)

    def prepare_host(self, env: Mapping[str, str], own_root: bool = False) -> None:
        """Give the server uid what it writes: the workspace root's own folders and the HTTP cache.
        The gateway that owns the root (`serve`) also removes the private folders a killed run left."""
        if own_root:
            shutil.rmtree(self.private_base, ignore_errors=True)
        if self.drop_to is None:
            return
        self.hand_over(self.workspace_root)
        quota_dir = self.workspace_root / ".gaia-quota"
        for folder in (quota_dir, quota_dir / "locks", quota_dir / "staging"):
            if folder.is_dir():
                self.hand_over(folder)
        cache = _http_cache_file(env)
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            if not cache.parent.stat().st_mode & stat.S_ISVTX:  # never a shared /tmp-like folder
                self.hand_over(cache.parent)
            for sibling in cache.parent.glob(f"{cache.name}*"):
                if sibling.is_file() and not sibling.is_symlink():
                    self.hand_over(sibling)

    def check(self, env: Mapping[str, str]) -> int:
        """Start one confined Python as a server would be; return its uid, or raise with what to do."""
        for program in ("bwrap", "setpriv") if self.drop_to else ("bwrap",):
            if shutil.which(program) is None:
                raise ConfinementUnavailable(
                    f"Server confinement needs {program} (apt-get install "
                    f"{'bubblewrap' if program == 'bwrap' else 'util-linux'}); {_OPT_OUT}"
                )
        probe = [sys.executable, "-c", PROBE, str(self.workspace_root), str(self.dataset or "")]
        launch = self.launch(probe, env, "probe")
        try:
            done = subprocess.run(launch.argv, env=launch.env, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfinementUnavailable(f"Server confinement could not start ({exc}); {_OPT_OUT}") from None
        finally:
            launch.cleanup()
        try:
            answer = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            self.forget_private_base()
            detail = (
                done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
            )
            raise ConfinementUnavailable(
                f"Servers cannot be confined here ({detail}). In Docker run with --security-opt "
                f"seccomp=unconfined --security-opt systempaths=unconfined, or enable user namespaces; {_OPT_OUT}"
            ) from None
        if answer["problems"]:
            self.forget_private_base()
            raise ConfinementUnavailable(f"A confined server {'; '.join(answer['problems'])}.")
        return int(answer["uid"])

    # -- one server ---------------------------------------------------------------------------

    def launch(self, argv: list[str], env: Mapping[str, str], name: str) -> Launch:
        """The confined command for `argv`, with a private /tmp (also $HOME) made for it."""
        safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in name)
        self.private_base.mkdir(mode=0o700, exist_ok=True)
        private = Path(tempfile.mkdtemp(prefix=f"{safe}-", dir=self.private_base))
        home = _private_home(env.get("HOME", ""), argv, env, self)
        pycache = _bytecode_cache(env)
        pycache.mkdir(parents=True, exist_ok=True)
        if self.drop_to is not None and pycache.stat().st_uid != self.drop_to[0]:
            self.hand_over(pycache)
        binds = self._binds(argv, env, private, home)
        for bind in binds:  # mount points under $HOME (a Python under /root) are the server's own
            if bind.dest.is_relative_to(home) and bind.dest != Path(home):
                (private / "home" / bind.dest.relative_to(home)).parent.mkdir(parents=True, exist_ok=True)
        (private / "home").mkdir(exist_ok=True)
        if self.drop_to is not None:
            for folder, _, _ in os.walk(private):
                os.chown(folder, *self.drop_to)
        server_env = {**env, "TMPDIR": "/tmp", "HOME": home}
        if not env.get("PYTHONDONTWRITEBYTECODE"):
            # The checkout and venvs are read-only here, so Python could never save what it compiles
            # and would compile every import at each start (pandas alone takes seconds): servers
            # share one bytecode folder instead, which the gateway itself never reads. Not when
            # writing bytecode is off: the prefix would hide the .pyc files beside the sources.
            server_env["PYTHONPYCACHEPREFIX"] = str(_bytecode_cache(env))
        return Launch([*self._bwrap(binds, server_env), *self._as_server(), *argv], server_env, private)

    def _binds(self, argv: list[str], env: Mapping[str, str], private: Path, home: str) -> list[Bind]:
        binds = [Bind(private, Path("/tmp"), writable=True)]
        if home != "/tmp":
            binds.append(Bind(private / "home", Path(home), writable=True))
        for root in _runtime_roots(argv, env):
            binds.append(Bind(root, root))
        binds.append(Bind(self.workspace_root, self.workspace_root, writable=True))
        if self.dataset is not None:
            binds.append(Bind(self.dataset, self.dataset))
        cache = _http_cache_file(env)
        if cache is not None and cache.parent.is_dir():
            binds.append(Bind(cache.parent, cache.parent, writable=True))
        binds.append(Bind(_bytecode_cache(env), _bytecode_cache(env), writable=True))
        for path in _named_paths(env):
            binds.append(Bind(path, path))
        if env.get("DISPLAY") and Path("/tmp/.X11-unix").is_dir():  # the --vnc view's X server
            binds.append(Bind(Path("/tmp/.X11-unix"), Path("/tmp/.X11-unix")))
        return _outermost_first(binds)

    def _bwrap(self, binds: list[Bind], env: Mapping[str, str]) -> list[str]:
        args = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        args += ["--unshare-cgroup-try", "--hostname", "gaia-server"]
        if self.drop_to is None:
            args += ["--unshare-user", "--proc", "/proc"]
        else:  # caps to mount /proc and drop to the uid; the shell in _as_server gives them up
            args += ["--cap-drop", "ALL", "--dir", "/proc"]
            for cap in ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):
                args += ["--cap-add", cap]
        args += ["--ro-bind", "/usr", "/usr", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm"]
        args += root_program_dirs()
        args += ["--perms", "0755", "--dir", "/etc"]
        for name in ETC_ENTRIES:
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        args += [
            "--perms",
            "1777",
            "--tmpfs",
            "/var/tmp",
            "--ro-bind-try",
            "/var/cache/fontconfig",
            "/var/cache/fontconfig",
        ]
        made = {"/", "/usr", "/etc", "/var", "/var/tmp", "/proc", "/dev", "/tmp"}
        for bind in binds:
            for parent in reversed(bind.dest.parents):  # traversable: bubblewrap would make them 0700
                if str(parent) not in made:
                    made.add(str(parent))
                    args += ["--perms", "0755", "--dir", str(parent)]
            made.add(str(bind.dest))
            args += ["--bind" if bind.writable else "--ro-bind", str(bind.source), str(bind.dest)]
        return [*args, "--chdir", _visible_cwd(binds), "--"]

    def _as_server(self) -> list[str]:
        if self.drop_to is None:
            return []
        uid, gid = self.drop_to
        drop = f"setpriv --reuid={uid} --regid={gid} --clear-groups --inh-caps=-all --bounding-set=-all"
        script = f'mount -t proc -o nosuid,nodev,noexec proc /proc && exec {drop} --no-new-privs -- "$@"'
        return ["/bin/sh", "-c", script, "gaia-server"]


_OPT_OUT = (
    "set GAIA_SERVER_CONFINE=0 to run servers without confinement (they then see the whole host "
    "as the gateway's user)."
)


def _private_home(home: str, argv: list[str], env: Mapping[str, str], confinement: Confinement) -> str:
    """$HOME as the gateway has it, made the server's private folder there; /tmp when that path is
    `/`, relative, or a folder the server must see as it is (a checkout or workspace root there)."""
    shown = {*_runtime_roots(argv, env), confinement.workspace_root, confinement.dataset}
    if not home.startswith("/") or Path(home) == Path("/") or Path(os.path.realpath(home)) in shown:
        return "/tmp"
    return home


def _server_ids(value: str) -> tuple[int, int]:
    """GAIA_SERVER_UID as `UID` or `UID:GID`; the default is nobody (65534:65534)."""
    if not value.strip():
        return DEFAULT_UID, DEFAULT_UID
    uid, _, gid = value.strip().partition(":")
    try:
        ids = int(uid), int(gid or uid)
    except ValueError:
        raise ConfinementUnavailable(f"{UID_ENV}={value!r} is not UID or UID:GID (numbers, not 0).") from None
    if 0 in ids or min(ids) < 0:
        raise ConfinementUnavailable(f"{UID_ENV}={value!r}: servers must not run as root (uid or gid 0).")
    return ids


def _runtime_roots(argv: list[str], env: Mapping[str, str]) -> list[Path]:
    """The checkout, this Python and its venv, the server's own Python and venv, and node."""
    from .registry import REPO_ROOT

    roots = {Path(os.path.realpath(p)) for p in (REPO_ROOT, sys.prefix, sys.base_prefix)}
    program = Path(argv[0])
    if program.is_absolute():
        roots.add(Path(os.path.realpath(program)).parent.parent)
        if (program.parent.parent / "pyvenv.cfg").is_file():
            roots.add(Path(os.path.realpath(program.parent.parent)))
    node = shutil.which("node", path=env.get("PATH"))
    if node:
        roots.add(Path(os.path.realpath(node)).parent.parent)
    return sorted(r for r in roots if r.is_dir() and not r.is_relative_to("/usr") and r != Path("/"))


def _http_cache_file(env: Mapping[str, str]) -> Path | None:
    """The HTTP cache's SQLite file (the kit's default when unset), None when it lives in Redis."""
    if env.get("GAIA_HTTP_CACHE_URL", "").strip():
        return None
    if configured := env.get("GAIA_HTTP_CACHE_PATH", "").strip():
        return Path(os.path.realpath(Path(configured).expanduser()))
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(os.path.realpath(base)) / "gaia-env" / "http-cache.sqlite"


def _bytecode_cache(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(os.path.realpath(base)) / "gaia-env" / "pycache"


def _named_paths(env: Mapping[str, str]) -> list[Path]:
    paths = []
    for var in READ_ONLY_PATH_VARS:
        value = env.get(var, "").strip()
        if value and Path(value).expanduser().exists():
            paths.append(Path(value).expanduser().absolute())
    whisper = Path(env.get("HOME") or Path.home()) / ".cache" / "whisper"
    if whisper.is_dir():
        paths.append(whisper)
    return paths


def _outermost_first(binds: list[Bind]) -> list[Bind]:
    """Parents before children (a later mount hides what it covers); a read-only bind already
    shown by a read-only parent at the same place is left out."""
    ordered: list[Bind] = []
    for bind in sorted(binds, key=lambda b: (len(b.dest.parts), str(b.dest))):
        covered = any(
            not b.writable
            and not bind.writable
            and b.source == b.dest
            and bind.source == bind.dest
            and bind.dest.is_relative_to(b.dest)
            for b in ordered
        )
        if not covered and all(b.dest != bind.dest for b in ordered):
            ordered.append(bind)
    return ordered


def _visible_cwd(binds: list[Bind]) -> str:
    """The gateway's working directory when the server can see it (relative paths keep meaning)."""
    cwd = Path.cwd()
    shown = any(cwd.is_relative_to(b.dest) and b.source == b.dest for b in binds)
    return str(cwd) if shown else "/tmp"
