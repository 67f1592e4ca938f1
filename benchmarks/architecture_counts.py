"""Import circles in lightning_tau (strongly connected components of grimp's graph, TYPE_CHECKING and function-level
imports included), module sizes of tuner/, and TimescaleFinder.__init__'s length."""

import ast
import pathlib

import grimp

g = grimp.build_graph("lightning_tau", include_external_packages=False)
mods = sorted(m for m in g.modules if m.startswith("lightning_tau"))
edges = {m: {d for d in g.find_modules_directly_imported_by(m) if d in mods} for m in mods}
index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]


def visit(v):
    index[v] = low[v] = n[0]
    n[0] += 1
    stack.append(v)
    on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop()
            on.discard(w)
            c.append(w)
            if w == v:
                break
        if len(c) > 1:
            sccs.append(sorted(c))


for m in mods:
    if m not in index:
        visit(m)
# a package's __init__ importing its own submodules is not a circle of modules: drop package->child edges
real = [
    c
    for c in sccs
    if not all(any(o.startswith(x + ".") for o in c) or any(x.startswith(o + ".") for o in c) for x in c)
]
print("import circles (SCCs > 1 module):", len(sccs), sccs)
sizes = sorted(
    ((len(p.read_text().splitlines()), str(p)) for p in pathlib.Path("lightning_tau").rglob("*.py")), reverse=True
)
print("largest modules:", sizes[:5])
print("tuner/ modules over 600 lines:", [s for s in sizes if s[0] > 600 and "tuner" in s[1]])
tree = ast.parse(pathlib.Path("lightning_tau/tuner/finder.py").read_text())
init = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "__init__")
print("TimescaleFinder.__init__ lines:", init.end_lineno - init.lineno + 1)
importers = [m for m in mods if "lightning_tau.tuner.finder" in edges[m]]
print("modules importing tuner.finder:", importers)

# Issue 39's counts: rooms (tuner/'s top-level modules and subpackages), arrows (import edges between lightning_tau
# modules), upward imports (a module importing its own package's face or a parent's module), TimescaleCallback's
# length, test files per folder and the median test-name length.
tuner = pathlib.Path("lightning_tau/tuner")
rooms = sorted(
    p.name for p in tuner.iterdir() if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").exists()
)
print(f"tuner/ rooms: {len(rooms)}", rooms)
print("arrows (import edges inside lightning_tau):", sum(len(v) for v in edges.values()))
upward = [
    (m, d)
    for m in mods
    for d in edges[m]
    if m.startswith(d + ".") and pathlib.Path(*d.split(".")).is_dir() and not m.endswith("__init__")
]
print("upward imports (a module importing a package that holds it):", len(upward), upward)
cb = ast.parse(pathlib.Path("lightning_tau/callback.py").read_text())
klass = next(n for n in ast.walk(cb) if isinstance(n, ast.ClassDef) and n.name == "TimescaleCallback")
print("TimescaleCallback lines:", klass.end_lineno - klass.lineno + 1, "; callback.py lines:", len(cb.body) and len(pathlib.Path("lightning_tau/callback.py").read_text().splitlines()))
folders: dict[str, int] = {}
names: list[int] = []
for p in pathlib.Path("tests").rglob("test_*.py"):
    folders[str(p.parent)] = folders.get(str(p.parent), 0) + 1
    names += [len(n.name) for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
print("test files per folder:", dict(sorted(folders.items())))
names.sort()
print("tests:", len(names), "median test-name length:", names[len(names) // 2])
docs = sorted(
    len((ast.get_docstring(ast.parse(p.read_text())) or "").split()) for p in pathlib.Path("lightning_tau").rglob("*.py")
)
print("module docstring words: median", docs[len(docs) // 2], "max", docs[-1])
