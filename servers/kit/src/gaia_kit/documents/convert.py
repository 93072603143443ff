"""Legacy Office formats (.doc, .ppt, .xls) through headless LibreOffice, one subprocess per file.

Each conversion gets its own throwaway LibreOffice profile: two soffice processes sharing a profile
either block on its lock or hand the job to the first one, so concurrent calls would collide.
The process runs in its own process group (gaia_kit.execution.process), and the whole group is killed at the deadline.
It runs confined (gaia_kit.execution.confine): it sees the one file, its profile and the output folder,
and has no network, so a document's linked images, styles or OLE links cannot make it fetch anything.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from gaia_kit.core.errors import ToolFailure
from gaia_kit.execution.confine import run_confined

# Debian's LibreOffice keeps its registry under /etc (/usr/lib/libreoffice/share/registry links there).
CONFIGURATION = [path for path in (Path("/etc/libreoffice"),) if path.is_dir()]
APT_PACKAGES = "libreoffice-writer-nogui, libreoffice-impress-nogui or libreoffice-calc-nogui"


def soffice_binary() -> str | None:
    """The LibreOffice executable, or None when it is not installed."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def convert_with_libreoffice(source: Path, target_format: str, out_dir: Path, timeout: float) -> Path:
    """Convert `source` to `target_format` (docx, pptx, xlsx, pdf, ...) into `out_dir`; return the new file."""
    binary = soffice_binary()
    if binary is None:
        raise ToolFailure(
            f"Cannot read {source.name}: converting it needs LibreOffice, which is not installed "
            f"(apt-get install {APT_PACKAGES})."
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gaia-soffice-") as profile:
        command = [
            binary,
            f"-env:UserInstallation={Path(profile).as_uri()}",
            "--headless",
            "--norestore",
            "--nolockcheck",
            "--convert-to",
            target_format,
            "--outdir",
            str(out_dir),
            str(source),
        ]
        try:
            # its own process group: oosplash starts soffice.bin as a child, and the deadline kills both
            done = run_confined(
                command,
                reads=[source, *CONFIGURATION],
                writes=[out_dir, Path(profile)],
                timeout=timeout,
                env={"HOME": profile},
                merge_stderr=True,
            )
        except subprocess.TimeoutExpired:
            raise ToolFailure(
                f"Converting {source.name} with LibreOffice took longer than {timeout:.0f} s and was stopped; "
                "the file may be very large or damaged."
            ) from None
    target = out_dir / f"{source.stem}.{target_format.split(':')[0]}"
    if done.returncode != 0 or not target.exists():
        detail = done.stdout.decode("utf-8", "replace").strip().splitlines()
        reason = detail[-1][:200] if detail else f"exit status {done.returncode}"
        raise ToolFailure(
            f"LibreOffice could not convert {source.name} to {target_format} ({reason}); "
            "the file may be damaged or not what its extension says."
        )
    return target
