"""No import cycle anywhere in the project: every import (module level and inside functions)
is an edge, and the graph of the five packages' modules has no strongly connected component
of more than one module. A lazy import inside a function hides a cycle from Python, not from
this test."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tdmodels", "inference", "online", "diagnostics", "tutorduel")


def module_files(root: Path, packages=PACKAGES) -> dict[str, Path]:
    out = {}
    for pkg in packages:
        for path in (root / pkg).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def imported_modules(name: str, path: Path, known) -> set[str]:
    """The project modules `name` imports anywhere in its source (``from a.b import c`` counts
    as a.b.c when that is a module, else a.b)."""
    found = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: None if is_package else -1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
    out = set()
    for target in found:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def project_graph(root: Path = ROOT) -> dict[str, set[str]]:
    files = module_files(root)
    return {name: imported_modules(name, path, files) for name, path in files.items()}


def test_no_import_cycle():
    assert cycles(project_graph()) == []


def test_the_walk_sees_lazy_imports_and_cycles(tmp_path):
    pkg = tmp_path / "tdmodels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from tdmodels.b import X\n")
    (pkg / "b.py").write_text("X = 1\n\ndef f():\n    from . import c\n")
    (pkg / "c.py").write_text("def g():\n    import tdmodels.a\n")
    (pkg / "d.py").write_text("from tdmodels import a\n")
    graph = {name: imported_modules(name, path, module_files(tmp_path, ("tdmodels",)))
             for name, path in module_files(tmp_path, ("tdmodels",)).items()}
    assert graph["tdmodels.b"] == {"tdmodels", "tdmodels.c"} and graph["tdmodels.d"] == {"tdmodels", "tdmodels.a"}
    assert cycles(graph) == [["tdmodels.a", "tdmodels.b", "tdmodels.c"]]


def test_the_walk_sees_the_whole_project():
    graph = project_graph()
    assert "inference.kernels.laplace" in graph and "inference.constants" in graph["inference.kernels.laplace"]
    assert graph["inference.constants"] == set()
