"""The program that runs one Python cell in the local sandbox and carries its variables to the next.

A sandboxed process lives for one call, so state between calls is kept on disk, in the session's
sandbox directory: picklable values by pickle, imported modules by name, plain functions by their
marshalled code. What cannot be kept (classes defined in a cell, open files, closures) is named on
stderr, so the agent knows to redefine it. The cell arrives on stdin; like a notebook, the value of
a final expression is printed.
"""

STATE_FILE = ".e2b_state.pkl"

DRIVER = r"""
import ast, builtins, importlib, io, linecache, marshal, os, pickle, sys, traceback, types

STATE = STATE_FILE_NAME
source = sys.stdin.read()
sys.stdin = io.StringIO("")
# Tracebacks then show the failing line of the cell.
linecache.cache["<cell>"] = (len(source), None, source.splitlines(True), "<cell>")
ns = {"__name__": "__main__", "__builtins__": builtins}

if os.path.exists(STATE):
    try:
        with open(STATE, "rb") as handle:
            saved = pickle.load(handle)
    except Exception:
        saved = {}
    for name, (kind, payload) in saved.items():
        try:
            if kind == "module":
                ns[name] = importlib.import_module(payload)
            elif kind == "function":
                code, defaults, kwdefaults = payload
                function = types.FunctionType(marshal.loads(code), ns, name, defaults)
                function.__kwdefaults__ = kwdefaults
                ns[name] = function
            else:
                ns[name] = pickle.loads(payload)
        except Exception as exc:
            print(f"[{name} from an earlier call could not be restored: {exc}]", file=sys.stderr)


def show_error(exc):
    frames = traceback.extract_tb(exc.__traceback__)
    cell = [frame for frame in frames if frame.filename != "<string>"]
    lines = traceback.format_list(cell) + traceback.format_exception_only(type(exc), exc)
    sys.stderr.write("Traceback (most recent call last):\n" + "".join(lines))


failed = False
try:
    tree = ast.parse(source, "<cell>")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), ns)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)
        if value is not None:
            print(repr(value))
except BaseException as exc:
    failed = not (isinstance(exc, SystemExit) and exc.code in (None, 0))
    if failed:
        show_error(exc)

kept, lost = {}, []
for name, value in list(ns.items()):
    if name.startswith("__"):
        continue
    if isinstance(value, types.ModuleType):
        kept[name] = ("module", value.__name__)
    elif isinstance(value, types.FunctionType) and value.__module__ == "__main__" and not value.__closure__:
        kept[name] = ("function", (marshal.dumps(value.__code__), value.__defaults__, value.__kwdefaults__))
    else:
        try:
            kept[name] = ("value", pickle.dumps(value))
        except Exception:
            lost.append(f"{name} ({type(value).__name__})")
with open(STATE + ".tmp", "wb") as handle:
    pickle.dump(kept, handle)
os.replace(STATE + ".tmp", STATE)
if lost:
    print("[Not kept for the next call (cannot be saved): " + ", ".join(lost) + "]", file=sys.stderr)
sys.stdout.flush()
sys.stderr.flush()
os._exit(1 if failed else 0)
""".replace("STATE_FILE_NAME", repr(STATE_FILE))
