"""No server opens, lists, makes or moves a user's path by name (issue 22, finding 1).

A path the guard checked (`PathGuard.resolve`, `existing_file`, `regular_file`, `free_path`, or a
function of the same package that returns one) names a place that sandboxed code can turn into a link
at any moment. Such a path may only be shown (`display`), or given to the kit's confined writers
(`atomic_write`, `place`, `staged`, `make_dirs`, `copy_into`), which rename into folders opened
beneath the workspace. Files are read through `open_file` / `local_path` / `program_path`, and folders
are listed through `open_dir`. This test follows such paths through assignments, loops, `with`, returns
and calls within each package (read from the AST), and finds `open()`, `Path.open/read_*/write_*/
iterdir/glob/mkdir/unlink/rename/...`, and `os`/`shutil` file calls made on them. A call with
`dir_fd=` works inside a folder opened safely and passes. What is left is allow-listed with a reason.

Limits: a path that reaches another package (a library, the kit from a server) is not followed. The
kit's own functions that take a path are listed in docs/gateway.md, "Paths resolved without a race".
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ALLOWED = {
    ("documents_csv_server", "report._cell", ".replace"): "str.replace on a cell's text, not a file",
}
"""(package, module.function, call): why that call on a checked path is not a file access by name."""


SOURCES = {"resolve", "existing_file", "regular_file", "free_path"}
CONFINED = {
    "atomic_write",
    "place",
    "staged",
    "make_dirs",
    "copy_into",
    "ensure_room",
    "room_for",
    "scratch",
    "save_atomically",
    "workbook_lock",
    "display",
    "shown",
    "conceal",
}
FILE_METHODS = {
    "open",
    "read_text",
    "read_bytes",
    "write_text",
    "write_bytes",
    "iterdir",
    "rglob",
    "glob",
    "mkdir",
    "unlink",
    "rename",
    "replace",
    "touch",
    "rmdir",
    "symlink_to",
    "hardlink_to",
    "chmod",
}
MODULE_OPS = {
    "os": {
        "open",
        "scandir",
        "listdir",
        "walk",
        "makedirs",
        "mkdir",
        "rename",
        "replace",
        "remove",
        "unlink",
        "link",
        "symlink",
        "rmdir",
        "chmod",
        "truncate",
    },
    "shutil": {"copy", "copy2", "copyfile", "copyfileobj", "copytree", "move", "rmtree"},
}

DIR_FD = {"dir_fd", "src_dir_fd", "dst_dir_fd"}


def names_in(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


class Package:
    """Every function of one package, by (module, name); calls resolved through the module's imports."""

    def __init__(self, files):
        self.modules = {}
        for path in files:
            tree = ast.parse(path.read_text())
            self.modules[path.stem] = tree
        self.functions, self.imports = {}, {}
        for stem, tree in self.modules.items():
            table = self.imports[stem] = {}
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.functions[(stem, node.name)] = node
                elif isinstance(node, ast.ImportFrom):
                    source = (node.module or "").rsplit(".", 1)[-1]
                    for alias in node.names:
                        if alias.name in self.modules:
                            table[alias.asname or alias.name] = ("module", alias.name)
                        elif source in self.modules:
                            table[alias.asname or alias.name] = (source, alias.name)
        self.sources, self.params = set(), {}

    def target(self, stem, call):
        f = call.func
        if isinstance(f, ast.Name):
            key = self.imports[stem].get(f.id, (stem, f.id))
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            entry = self.imports[stem].get(f.value.id)
            key = (entry[1], f.attr) if entry and entry[0] == "module" else (f.value.id, f.attr)
        else:
            return None
        return key if key in self.functions else None

    def is_source(self, stem, call):
        f = call.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name in SOURCES and (call.args or name != "resolve"):
            return True
        return self.target(stem, call) in self.sources

    def tainted(self, stem, expr, names):
        if isinstance(expr, ast.Call):
            f = expr.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in CONFINED:
                return False
        if names_in(expr) & names:
            return True
        return any(isinstance(n, ast.Call) and self.is_source(stem, n) for n in ast.walk(expr))

    def flow(self, stem, fn):
        names = set(self.params.get((stem, fn.name), ()))
        for _ in range(3):
            for node in ast.walk(fn):
                value, targets = None, []
                if isinstance(node, ast.Assign):
                    value, targets = node.value, node.targets
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                    value, targets = node.value, [node.target]
                elif isinstance(node, (ast.For, ast.comprehension)):
                    value, targets = node.iter, [node.target]
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    value, targets = node.context_expr, [node.optional_vars]
                if value is not None and self.tainted(stem, value, names):
                    for target in targets:
                        names |= names_in(target)
        return names

    def solve(self):
        changed = True
        while changed:
            changed = False
            for (stem, name), fn in self.functions.items():
                if name in CONFINED:
                    continue
                names = self.flow(stem, fn)
                for node in ast.walk(fn):
                    if (
                        isinstance(node, ast.Return)
                        and node.value is not None
                        and (stem, name) not in self.sources
                        and self.tainted(stem, node.value, names)
                    ):
                        self.sources.add((stem, name))
                        changed = True
                    if isinstance(node, ast.Call):
                        key = self.target(stem, node)
                        if key is None or key[1] in CONFINED:
                            continue
                        callee = self.functions[key]
                        params = [
                            a.arg
                            for a in (*callee.args.posonlyargs, *callee.args.args)
                            if a.arg not in ("self", "cls")
                        ]
                        marks = {
                            params[i]
                            for i, a in enumerate(node.args)
                            if i < len(params) and self.tainted(stem, a, names)
                        }
                        marks |= {
                            k.arg
                            for k in node.keywords
                            if k.arg in params and self.tainted(stem, k.value, names)
                        }
                        have = self.params.setdefault(key, set())
                        if marks - have:
                            have |= marks
                            changed = True

    def sinks(self):
        for (stem, name), fn in self.functions.items():
            names = self.flow(stem, fn)
            for node in ast.walk(fn):
                if not isinstance(node, ast.Call):
                    continue
                f = node.func
                args = [*node.args, *(k.value for k in node.keywords)]
                if {k.arg for k in node.keywords} & DIR_FD:
                    continue  # a name inside a folder already opened beneath its root
                if (
                    isinstance(f, ast.Name)
                    and f.id == "open"
                    and node.args
                    and self.tainted(stem, node.args[0], names)
                ):
                    yield stem, name, "open"
                elif isinstance(f, ast.Attribute):
                    module = f.value.id if isinstance(f.value, ast.Name) else None
                    if module in MODULE_OPS:
                        if f.attr in MODULE_OPS[module] and any(self.tainted(stem, a, names) for a in args):
                            yield stem, name, f"{module}.{f.attr}"
                    elif f.attr in FILE_METHODS and self.tainted(stem, f.value, names):
                        yield stem, name, f".{f.attr}"


def packages() -> list[Path]:
    return sorted(p.parent for p in ROOT.glob("servers/*/src/*/__init__.py") if "kit-testing" not in str(p))


def unconfined(folder: Path) -> set[tuple[str, str, str]]:
    package = Package(sorted(folder.rglob("*.py")))
    package.solve()
    return {(folder.name, f"{stem}.{name}", call) for stem, name, call in package.sinks()}


def test_no_server_opens_a_checked_path_by_name() -> None:
    found = set().union(*(unconfined(folder) for folder in packages()))
    assert found - set(ALLOWED) == set(), (
        "open these through the path guard (open_file, open_dir, local_path, program_path) or write "
        "them with the kit's confined writers (atomic_write, place, make_dirs, copy_into)"
    )
    assert set(ALLOWED) - found == set(), "allow-list entries that no longer match anything"


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    """A server that reads, lists and makes a checked path by name is caught, through a helper too."""
    folder = tmp_path / "bad_server"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "helpers.py").write_text(
        "def sniff(path):\n    with open(path, 'rb') as handle:\n        return handle.read(4)\n"
    )
    (folder / "server.py").write_text(
        "import os\nfrom . import helpers\n\n"
        "def target(guard, raw):\n    return guard.resolve(raw)\n\n"
        "def tool(guard, raw):\n    path = target(guard, raw)\n    helpers.sniff(path)\n"
        "    os.listdir(path.parent)\n    (path.parent / 'x').mkdir()\n    return guard.display(path)\n"
        "def fine(guard, raw, fd):\n    path = guard.resolve(raw)\n    os.open(path.name, os.O_RDONLY, dir_fd=fd)\n"
    )
    assert unconfined(folder) == {
        ("bad_server", "helpers.sniff", "open"),
        ("bad_server", "server.tool", "os.listdir"),
        ("bad_server", "server.tool", ".mkdir"),
    }
