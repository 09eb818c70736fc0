"""The import structure of the five packages: no circles inside a package, no private names imported from another
module, and the layers run one way (parsers < data < index < dtdialog < eval).

Read from the source with ``ast`` (nothing is imported). Every ``import`` and ``from ... import`` counts, at module
level and inside functions alike: a lazy import still makes two modules depend on each other, it only hides the
circle from the interpreter. ``importlib.import_module`` (the parser registry loading its plugins) is not an import
statement and does not count. ``from pkg import name`` points at the submodule ``pkg.name`` when that file exists,
else at ``pkg`` itself, as grimp/import-linter read it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Lowest layer first: a module may import its own layer and the ones before it, never a later one.
LAYERS = ("parsers", "data", "index", "dtdialog", "eval")
#: ``dtdialog eval`` hands its arguments to the evaluation: the product's one deliberate link up to ``eval``.
UPWARD_ALLOWED = {("dtdialog.commands.eval", "eval.reconstruct")}


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    name: str  # the imported name ("" for ``import a.b``)
    line: int

    def where(self) -> str:
        return f"{self.source}:{self.line} imports {self.target}{'.' + self.name if self.name else ''}"


def module_files() -> dict[str, tuple[Path, bool]]:
    """Return ``{dotted module name: (file, is a package __init__)}`` for every module of the five packages."""
    out = {}
    for package in LAYERS:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def project_imports() -> list[Import]:
    """Return every import statement of the five packages whose target is one of their modules."""
    modules = module_files()
    found = []
    for module, (path, is_package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                found += [Import(module, a.name, "", node.lineno) for a in node.names if a.name in modules]
            elif isinstance(node, ast.ImportFrom):
                base = _base(module, is_package, node)
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    if target in modules:
                        found.append(Import(module, target, "", node.lineno))
                    elif base in modules:
                        found.append(Import(module, base, alias.name, node.lineno))
    return [i for i in found if i.target != i.source]


def circles(imports: list[Import]) -> list[list[str]]:
    """Return the strongly connected groups (two or more modules) of the import graph within each package."""
    graph: dict[str, set[str]] = {}
    for i in imports:
        if i.source.split(".")[0] == i.target.split(".")[0]:
            graph.setdefault(i.source, set()).add(i.target)
            graph.setdefault(i.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups = []

    def visit(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_checker_finds_a_circle_through_a_lazy_import():
    imports = [Import("p.a", "p.b", "", 1), Import("p.b", "p.c", "f", 9), Import("p.c", "p.a", "", 40),
               Import("p.c", "q.a", "", 2), Import("q.a", "p.c", "", 2)]
    assert circles(imports) == [["p.a", "p.b", "p.c"]]


def test_no_import_circles_inside_a_package():
    imports = project_imports()
    found = circles(imports)
    detail = ["  " + i.where() for group in found for i in imports if i.source in group and i.target in group]
    assert not found, "import circles:\n" + "\n".join(map(str, found)) + "\nthrough:\n" + "\n".join(detail)


def test_no_private_name_is_imported_from_another_module():
    private = [i.where() for i in project_imports() if i.name.startswith("_") and not i.name.startswith("__")]
    assert not private, "private names imported across modules (make them public where they are shared):\n" + \
        "\n".join(private)


def test_a_lower_layer_never_imports_a_higher_one():
    rank = {p: k for k, p in enumerate(LAYERS)}
    upward = [i.where() for i in project_imports()
              if rank[i.target.split(".")[0]] > rank[i.source.split(".")[0]]
              and (i.source, i.target) not in UPWARD_ALLOWED]
    assert not upward, "imports against the layers " + " < ".join(LAYERS) + ":\n" + "\n".join(upward)
