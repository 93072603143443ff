"""The installed kit imports no test library: every gaia_kit module loads in a Python where pytest,
hypothesis and gaia_kit_testing cannot be imported, as in a server's own environment or the image."""

from __future__ import annotations

import subprocess
import sys
import textwrap

BLOCKED = ("pytest", "_pytest", "hypothesis", "gaia_kit_testing")

PROBE = textwrap.dedent(
    """
    import importlib, importlib.abc, json, pkgutil, sys

    BLOCKED = {blocked!r}

    class NoTestLibraries(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{{name}} is a test library, and the kit must not need it")
            return None

    sys.meta_path.insert(0, NoTestLibraries())
    import gaia_kit

    names = ["gaia_kit"] + [m.name for m in pkgutil.walk_packages(gaia_kit.__path__, "gaia_kit.")]
    for name in names:
        importlib.import_module(name)
    print(json.dumps(sorted(names)))
    """
)


def test_every_kit_module_imports_with_test_libraries_absent():
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(blocked=BLOCKED)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    modules = set(done.stdout.split('"')[1::2])
    # The walk reached every subpackage, so a module that imported pytest could not hide.
    assert {
        "gaia_kit.core.server",
        "gaia_kit.web.http",
        "gaia_kit.pages.corpus",
        "gaia_kit.media.files",
    } <= modules
    assert not any(name.split(".")[-1].startswith(("fake", "testing", "loopback")) for name in modules)


def test_the_front_door_loads_only_the_core():
    """`from gaia_kit import KitServer` must not pay for trafilatura, pymupdf or httpx."""
    heavy = ["trafilatura", "pymupdf", "libzim", "PIL", "httpx", "charset_normalizer"]
    probe = (
        f"import sys, gaia_kit; loaded = [m.split('.')[0] for m in sys.modules]; "
        f"print(sorted({{m for m in sys.modules if m.startswith('gaia_kit.') and not m.startswith('gaia_kit.core')}} "
        f"| {{m for m in {heavy!r} if m in loaded}}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"
