"""The house rules of docs/architecture.md, read from the source: who may import whom, and that every
package declares what it imports (a server installs the gaia-kit extras of the kit subpackages it uses)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVERS = ROOT / "servers"
KIT = SERVERS / "kit"
KIT_SRC = KIT / "src" / "gaia_kit"
NOT_SERVERS = {"kit", "kit-testing"}
GATEWAY, TRAINER, TESTING, CONTRACT = "gaia_env", "gaia_train", "gaia_kit_testing", "gaia_contract"
CONTRACT_FOLDER = ROOT / "contract"
TEST_LIBRARIES = {"pytest", "_pytest", "hypothesis", TESTING}
# Imported inside a function and installed with pip beside the trainer's CPU torch, never by uv:
# media-audio-server's optional openai-whisper backend (scripts/whisper-extra.sh), and verl with the
# config libraries it brings, which gaia_kit_testing.verl_loop uses (scripts/trainer-extra.sh).
INSTALLED_OUTSIDE_UV = {"whisper", "verl", "hydra", "omegaconf"}


def server_folders() -> list[Path]:
    return sorted(
        p for p in SERVERS.iterdir() if (p / "pyproject.toml").exists() and p.name not in NOT_SERVERS
    )


# The packages whose dependency lists are checked against their imports. The trainer is not among them:
# its heavy imports (torch, verl, trl) come with pip extras on GPU nodes, and it never imports the kit.
def kit_users() -> list[Path]:
    return [*server_folders(), ROOT / "proxy", SERVERS / "kit-testing"]


def package_of(folder: Path) -> str:
    (package,) = [p.name for p in (folder / "src").iterdir() if (p / "__init__.py").exists()]
    return package


SERVER_PACKAGES = {package_of(folder): folder for folder in server_folders()}


def imports(folder: Path) -> set[str]:
    """Every absolute module name imported anywhere under `folder` (in functions too)."""
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
                found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def top_levels(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def kit_subpackages(modules: set[str]) -> set[str]:
    """The gaia_kit subpackages among `modules` (`from gaia_kit import KitServer` is core)."""
    found = set()
    for module in modules:
        parts = module.split(".")
        if parts[0] == "gaia_kit":
            found.add(parts[1] if len(parts) > 1 and (KIT_SRC / parts[1]).is_dir() else "core")
    return found


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def distributions_of() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def distributions(module: str) -> set[str]:
    """The PyPI names a top-level module may come from (workspace servers by their project name); the
    module's own name counts too (pymupdf4llm 2 is an empty distribution: pymupdf ships the module)."""
    if module in SERVER_PACKAGES:
        return {project(SERVER_PACKAGES[module])["name"]}
    return {normalized(name) for name in [*distributions_of().get(module, []), module]}


def project(folder: Path) -> dict:
    return tomllib.loads((folder / "pyproject.toml").read_text())["project"]


def requirement(text: str) -> tuple[str, set[str]]:
    """('gaia-kit', {'web', 'pages'}) for 'gaia-kit[web,pages]>=1'."""
    match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^\]]*)\])?", text)
    assert match, text
    extras = {e.strip() for e in (match[2] or "").split(",") if e.strip()}
    return normalized(match[1]), extras


def declared(requirements: list[str]) -> tuple[set[str], set[str]]:
    """(distribution names, gaia-kit extras) of a dependency list."""
    names, extras = set(), set()
    for text in requirements:
        name, wanted = requirement(text)
        names.add(name)
        if name == "gaia-kit":
            extras |= wanted
    return names, extras


def third_party(modules: set[str], own: str) -> set[str]:
    return {
        m
        for m in top_levels(modules)
        if m not in sys.stdlib_module_names
        and m not in {own, "gaia_kit", "__future__"} | INSTALLED_OUTSIDE_UV
    }


# ---- who may import whom ----


def test_servers_never_import_the_gateway_the_trainer_or_test_code():
    for folder in SERVER_PACKAGES.values():
        wrong = top_levels(imports(folder / "src")) & {GATEWAY, TRAINER} | (
            top_levels(imports(folder / "src")) & TEST_LIBRARIES
        )
        assert not wrong, f"{folder.name} imports {sorted(wrong)}"


def test_the_gateway_never_imports_a_server_or_test_code():
    wrong = top_levels(imports(ROOT / "proxy" / "src")) & (set(SERVER_PACKAGES) | {TRAINER} | TEST_LIBRARIES)
    assert not wrong, f"the gateway imports {sorted(wrong)}"


def test_the_trainer_reaches_tools_only_over_mcp():
    wrong = top_levels(imports(ROOT / "trainer" / "src")) & (
        set(SERVER_PACKAGES) | {GATEWAY, "gaia_kit"} | TEST_LIBRARIES
    )
    assert not wrong, f"the trainer imports {sorted(wrong)}"


def test_the_kit_never_imports_a_server_the_gateway_the_trainer_or_a_test_library():
    wrong = top_levels(imports(KIT_SRC)) & (set(SERVER_PACKAGES) | {GATEWAY, TRAINER} | TEST_LIBRARIES)
    assert not wrong, f"gaia_kit imports {sorted(wrong)}"


def test_the_contract_imports_nothing_and_depends_on_nothing():
    # The trainer installs it on GPU nodes without the rest of the project.
    assert not imports(CONTRACT_FOLDER / "src"), "gaia_contract imports something"
    assert project(CONTRACT_FOLDER)["dependencies"] == []


@pytest.mark.parametrize("folder", [*kit_users(), SERVERS / "kit", ROOT / "trainer"], ids=lambda p: p.name)
def test_whoever_imports_the_contract_declares_it(folder: Path):
    if CONTRACT in top_levels(imports(folder / "src")):
        assert "gaia-contract" in declared(project(folder)["dependencies"])[0], (
            f"{folder.name} imports gaia_contract: declare gaia-contract in its pyproject.toml"
        )


def test_the_kits_core_imports_no_other_subpackage():
    assert kit_subpackages(imports(KIT_SRC / "core")) <= {"core"}


def test_no_test_double_lives_in_the_kit():
    names = [p.stem for p in KIT_SRC.rglob("*.py")]
    assert not [n for n in names if n.startswith(("fake", "testing", "loopback"))]
    for path in KIT_SRC.rglob("*.py"):
        assert not re.search(r"^class Fake", path.read_text(), re.M), path


# ---- the trainer's rooms ----

TRAINER_SRC = ROOT / "trainer" / "src" / TRAINER
# Each room of gaia_train (a subpackage, or a module of its own) and the rooms it may import: the
# layering docs/architecture.md draws. `reward` imports nothing of the package because verl loads it
# by file path; the demo is for CPU machines and no room a GPU node runs imports it.
TRAINER_ROOMS = {
    "row": set(),
    "reward": set(),
    "episode": {"row", "reward"},
    "teams": {"episode"},
    "play": {"episode", "teams", "row"},
    "data": {"row", "reward"},
    "environment": {"episode"},
    "eval": {"episode", "play", "teams", "data", "row", "reward"},
    "verl_adapter": {"episode", "play", "teams", "data", "row", "reward"},
    "verl_agent": {"verl_adapter"},
    "trl_adapter": {"episode", "play", "teams", "row", "reward"},
    "demo": {"episode", "play", "teams", "data", "row", "reward", "trl_adapter"},
    "cli": {"episode", "data", "row", "eval", "environment", "verl_adapter", "demo"},
}
DEMO_LIBRARIES = {"docx", "fpdf", "openpyxl", "PIL"}


def trainer_modules() -> dict[str, Path]:
    """gaia_train's modules by dotted name (packages by their own name)."""
    found = {}
    for path in TRAINER_SRC.rglob("*.py"):
        parts = path.relative_to(TRAINER_SRC.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def resolved_imports(module: str, path: Path, *, top_level_only: bool = False) -> set[str]:
    """Every module `path` imports, relative imports resolved against `module`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    nodes = tree.body if top_level_only else ast.walk(tree)
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*head, *([node.module] if node.module else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == TRAINER and len(parts) > 1 else None


def test_every_trainer_module_lives_in_a_known_room():
    rooms = {room_of(m) for m in trainer_modules()} - {None}
    assert rooms == set(TRAINER_ROOMS), f"rooms without a rule: {sorted(rooms - set(TRAINER_ROOMS))}"


def test_each_trainer_room_imports_only_the_rooms_below_it():
    modules = trainer_modules()
    for module, path in modules.items():
        room = room_of(module)
        if room is None:
            continue
        used = {room_of(m) for m in resolved_imports(module, path) if m in modules} - {None, room}
        wrong = used - TRAINER_ROOMS[room]
        assert not wrong, (
            f"{module} imports the rooms {sorted(wrong)}; {room} may import {sorted(TRAINER_ROOMS[room])}"
        )


def test_gpu_node_code_never_imports_the_demo():
    # The cli imports it inside `demo-data` only, so a GPU node without the demo extra runs every other command.
    for module, path in trainer_modules().items():
        if room_of(module) == "demo":
            continue
        imported = resolved_imports(module, path, top_level_only=room_of(module) == "cli")
        assert not any(room_of(m) == "demo" for m in imported), f"{module} imports gaia_train.demo"
        assert not top_levels(imported) & DEMO_LIBRARIES, f"{module} imports the demo's libraries"


def test_the_demo_libraries_come_with_the_demo_extra():
    trainer = project(ROOT / "trainer")
    used = top_levels(imports(TRAINER_SRC / "demo")) & DEMO_LIBRARIES
    names, _ = declared(trainer["optional-dependencies"]["demo"])
    assert used and all(distributions(m) & names for m in used)
    assert not names & declared(trainer["dependencies"])[0], "a demo library is also a core dependency"


# ---- every package declares what it imports ----


@pytest.mark.parametrize("folder", kit_users(), ids=lambda p: p.name)
def test_a_package_declares_the_kit_extras_it_imports_and_no_others(folder: Path):
    used = kit_subpackages(imports(folder / "src")) - {"core"}
    names, extras = declared(project(folder)["dependencies"])
    assert "gaia-kit" in names
    assert extras == used, (
        f"{folder.name} imports gaia_kit.{{{', '.join(sorted(used))}}}: declare "
        f"gaia-kit[{','.join(sorted(used))}] in its pyproject.toml"
    )


@pytest.mark.parametrize("folder", kit_users(), ids=lambda p: p.name)
def test_a_package_declares_every_distribution_it_imports_and_no_others(folder: Path):
    modules = third_party(imports(folder / "src"), package_of(folder))
    names, _ = declared(project(folder)["dependencies"])
    missing = sorted(m for m in modules if not distributions(m) & names)
    assert not missing, f"{folder.name} imports but does not declare the distributions of {missing}"
    unused = names - {"gaia-kit"} - set().union(*map(distributions, modules))
    assert not unused, f"{folder.name} declares but never imports {sorted(unused)}"


def kit_extras() -> dict[str, list[str]]:
    return tomllib.loads((KIT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_each_kit_subpackage_has_an_extra_of_its_name():
    subpackages = {p.name for p in KIT_SRC.iterdir() if (p / "__init__.py").exists()}
    assert set(kit_extras()) == subpackages - {"core"}


@pytest.mark.parametrize(
    "subpackage", sorted(p.name for p in KIT_SRC.iterdir() if (p / "__init__.py").exists())
)
def test_a_kit_subpackages_extra_holds_what_it_imports(subpackage: str):
    base, _ = declared(project(KIT)["dependencies"])
    names, extras = declared(kit_extras().get(subpackage, []))
    modules = imports(KIT_SRC / subpackage)
    assert kit_subpackages(modules) - {"core", subpackage} <= extras, (
        f"gaia_kit.{subpackage} imports other subpackages: name their extras in its own"
    )
    reachable = set(base) | names
    for extra in extras:
        reachable |= declared(kit_extras()[extra])[0]
    missing = sorted(m for m in third_party(modules, "gaia_kit") if not distributions(m) & reachable)
    assert not missing, f"gaia_kit.{subpackage} imports {missing}, which its extra does not install"


def test_the_test_doubles_are_a_dev_dependency_only():
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "gaia-kit-testing" in root["dependency-groups"]["dev"]
    for folder in [ROOT, *kit_users(), ROOT / "trainer"]:
        if folder.name != "kit-testing":
            names, _ = declared(project(folder)["dependencies"])
            assert "gaia-kit-testing" not in names, f"{folder.name} ships the test doubles"
    # The image installs no dev group, so neither the doubles nor pytest reach it.
    syncs = [line for line in (ROOT / "docker" / "Dockerfile").read_text().splitlines() if "uv sync" in line]
    assert syncs and all("--no-dev" in line for line in syncs)


def test_the_architecture_page_lists_every_kit_module_in_its_subpackage():
    page = (ROOT / "docs" / "architecture.md").read_text()
    rows = dict(re.findall(r"^\| `gaia_kit\.(\w+)` \| ([\w, ]+) \|", page, re.M))
    actual = {
        sub.name: {p.stem for p in sub.glob("*.py") if p.stem != "__init__"}
        for sub in KIT_SRC.iterdir()
        if (sub / "__init__.py").exists()
    }
    assert {name: set(modules.replace(" ", "").split(",")) for name, modules in rows.items()} == actual


def test_the_architecture_page_lists_every_trainer_room():
    page = (ROOT / "docs" / "architecture.md").read_text()
    section = page.split("## The trainer's rooms", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"^\| `(\w+)` \|", section, re.M)) == set(TRAINER_ROOMS)


def test_the_architecture_page_lists_every_gateway_module_in_a_room():
    page = (ROOT / "docs" / "architecture.md").read_text()
    section = page.split("## The gateway's rooms", 1)[1].split("\n## ", 1)[0]
    listed = [
        m.strip()
        for row in re.findall(r"^\| (?!room )\w+ \| ([\w, ]+) \|", section, re.M)
        for m in row.split(",")
    ]
    actual = {p.stem for p in (ROOT / "proxy" / "src" / GATEWAY).glob("*.py")} - {"__init__", "__main__"}
    assert sorted(listed) == sorted(actual), (
        f"unlisted: {sorted(actual - set(listed))}, gone: {sorted(set(listed) - actual)}"
    )


# ---- one home for harnesses, one server list ----

LOADS_BY_PATH = re.compile(r"spec_from_file_location|run_path\(|SourceFileLoader|sys\.path\.(insert|append)")
# The only file loaded by path: the user's reward file, named in their VeRL config, checked as VeRL loads it.
LOADS_THE_USERS_FILE = {ROOT / "trainer" / "src" / "gaia_train" / "verl_adapter" / "config_check.py"}


def project_sources() -> list[Path]:
    folders = [
        ROOT / "benchmarks",
        ROOT / "tests",
        ROOT / "proxy",
        ROOT / "trainer",
        ROOT / "contract",
        SERVERS,
    ]
    return [
        path
        for folder in folders
        for path in folder.rglob("*.py")
        if not {".venv", "node_modules", "clients"} & set(path.relative_to(ROOT).parts)
    ]


def test_no_file_loads_another_folders_file_by_path():
    loaders = {
        path
        for path in project_sources()
        if path != Path(__file__) and LOADS_BY_PATH.search(path.read_text())
    }
    assert loaders <= LOADS_THE_USERS_FILE, (
        f"{sorted(str(p.relative_to(ROOT)) for p in loaders - LOADS_THE_USERS_FILE)} "
        "load a file by path: import it (benchmarks is a package, harnesses live in gaia_kit_testing)"
    )


def test_tests_holds_only_tests_and_its_conftest():
    """A helper module in tests/ would be importable only through pytest's path: harnesses live in
    gaia_kit_testing. Its subfolders hold programs other environments run (tests/clients)."""
    helpers = sorted(
        p.name
        for p in (ROOT / "tests").glob("*.py")
        if p.name != "conftest.py" and not p.name.startswith("test_")
    )
    assert not helpers, f"{helpers} in tests/: move them into gaia_kit_testing (servers/kit-testing)"
    pythonpath = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"][
        "pythonpath"
    ]
    assert "tests" not in pythonpath, (
        "pytest's pythonpath lists tests: import harnesses from gaia_kit_testing"
    )


def test_the_root_pyproject_lists_the_servers_of_the_registry():
    """servers.toml (gaia_env's package data) is the server list; the folders and the workspace follow it."""
    from gaia_env.registry import load_registry

    registry = set(load_registry())
    assert {folder.name for folder in server_folders()} == registry
    own_environment = {lock.parent.name for lock in SERVERS.glob("*/uv.lock")}
    folder_of = {normalized(project(folder)["name"]): folder.name for folder in server_folders()}
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    depended = {
        folder_of[name] for name, _ in map(requirement, root["project"]["dependencies"]) if name in folder_of
    }
    sourced = {
        folder_of[normalized(name)] for name in root["tool"]["uv"]["sources"] if normalized(name) in folder_of
    }
    assert depended == registry - own_environment, (
        "the root pyproject.toml's dependencies differ from servers.toml"
    )
    assert sourced == registry - own_environment, (
        "the root pyproject.toml's [tool.uv.sources] differ from servers.toml"
    )


def test_the_gateway_finds_its_registry_as_package_data():
    from gaia_env.registry import DEFAULT_REGISTRY

    assert DEFAULT_REGISTRY.is_file()
    assert DEFAULT_REGISTRY.parent == ROOT / "proxy" / "src" / "gaia_env"
