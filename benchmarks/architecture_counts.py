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
