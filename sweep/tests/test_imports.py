"""The package's import graph, read from its source with ast: modules import each other at the top only,
the dependencies point one way, and only the two modules that run on the venv's python in a child process
need more than the standard library: kiln_sweep.charts (the report's charts) and kiln_sweep.subscribers
(the fan-out benchmark's aiohttp client)."""

import ast
import sys

from conftest import SWEEP

PACKAGE = SWEEP / "kiln_sweep"


def parsed():
    """{module name: its syntax tree} for every module of kiln_sweep; the package itself is kiln_sweep."""
    trees = {}
    for f in sorted(PACKAGE.glob("*.py")):
        name = "kiln_sweep" if f.stem == "__init__" else f"kiln_sweep.{f.stem}"
        trees[name] = ast.parse(f.read_text(), str(f))
    return trees


def imported(node, modules):
    """The kiln_sweep modules an import statement brings in: `from kiln_sweep import x` is the module
    kiln_sweep.x when there is one, else a name of the package (kiln_sweep)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name.split(".")[0] == "kiln_sweep"}
    if not isinstance(node, ast.ImportFrom):
        return set()
    assert node.level == 0, f"relative import at line {node.lineno}: the package uses absolute ones"
    if node.module == "kiln_sweep":
        return {f"kiln_sweep.{a.name}" if f"kiln_sweep.{a.name}" in modules else "kiln_sweep" for a in node.names}
    return {node.module} if node.module and node.module.split(".")[0] == "kiln_sweep" else set()


def graph():
    """{module: the kiln_sweep modules it imports}, wherever in it the import is."""
    trees = parsed()
    return {name: set().union(*(imported(n, trees) for n in ast.walk(tree))) - {name} for name, tree in trees.items()}


def test_no_module_imports_another_inside_a_function_or_class():
    trees = parsed()
    hidden = []
    for name, tree in trees.items():
        top = set(tree.body)
        for node in ast.walk(tree):
            if node not in top and imported(node, trees):
                hidden.append(f"{name} line {node.lineno}: {ast.unparse(node)}")
    assert not hidden, "imports hidden below the top of a module (a cycle in disguise?): " + "; ".join(hidden)


def test_the_import_graph_has_no_cycle():
    edges = graph()
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(module):] + [module]))
        if module in done:
            return
        path.append(module)
        for dep in sorted(edges[module]):
            visit(dep)
        path.pop()
        done.add(module)

    for module in sorted(edges):
        visit(module)


# The modules run as `python -m MODULE` on the venv's python, and the third-party libraries each may use.
VENV_MODULES = {"kiln_sweep.charts": {"jinja2", "matplotlib", "plotly"}, "kiln_sweep.subscribers": {"aiohttp"}}


def test_only_the_venv_modules_import_third_party_libraries_and_nothing_imports_them():
    # The sweep runs on the system python3 alone; the charts and the subscribers run in the venv, in child
    # processes (python -m kiln_sweep.charts, python -m kiln_sweep.subscribers).
    third_party = {}
    for name, tree in parsed().items():
        for node in ast.walk(tree):
            roots = [a.name.split(".")[0] for a in node.names] if isinstance(node, ast.Import) else \
                [node.module.split(".")[0]] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            for root in roots:
                if root != "kiln_sweep" and root not in sys.stdlib_module_names:
                    third_party.setdefault(name, set()).add(root)
    assert third_party == VENV_MODULES
    assert [m for m, deps in graph().items() if deps & set(VENV_MODULES)] == []


def test_the_subscribers_import_nothing_of_the_package():
    # A client process on its own: it loads no sweep module (nothing that could pull in more).
    assert graph()["kiln_sweep.subscribers"] == set()
