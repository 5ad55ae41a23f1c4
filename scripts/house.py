"""The house's counts: the shape of the ``llmcourse`` package, measured statically (a report, not a test).

    .venv/bin/python scripts/house.py            # the counts
    .venv/bin/python scripts/house.py --verbose  # and every offender

It reads the source with :mod:`ast` (nothing is imported) and prints:

- import cycles between modules, imports inside functions included (strongly connected components);
- upward imports: a module importing from a floor above its own (the floors of ``LAYERS`` below, the same
  picture as README's architecture section and ``.importlinter``);
- hand-written modules over 900 lines (the generated formula cache aside);
- private names (``_x``) taken from another package, by ``from ... import _x`` or ``module._x``;
- public callables with more than 12 parameters, and functions (methods too) over 100 lines.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "llmcourse"


# Floors, lowest first, as .importlinter states them (its layers contract, top first); the package's own __init__ (the
# facade ``import llmcourse`` gives) sits below the checks and notebooks that import it and above all it imports.
def _floors() -> list[set[str]]:
    text = (ROOT / ".importlinter").read_text()
    block = text.split("layers =", 1)[1].split("\n\n", 1)[0]
    floors = []
    for line in block.strip().splitlines():
        rooms = {r.strip().removeprefix("llmcourse.") for r in line.replace(":", "|").split("|") if r.strip()}
        floors.append(rooms)
    floors.reverse()
    top = min(i for i, f in enumerate(floors) if f & {"interview", "exercises"})  # below the lower of the two
    floors.insert(top, {""})
    return floors


LAYERS: list[set[str]] = _floors()
GENERATED = {"llmcourse.formulas.cache"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def package_of(mod: str) -> str:
    """The top-level room of a module: ``llmcourse.replica.step`` -> ``replica``."""
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def floor_of(mod: str) -> int:
    room = package_of(mod)
    if room.startswith("formulas"):
        room = "formulas"
    for i, rooms in enumerate(LAYERS):
        if room in rooms:
            return i
    return len(LAYERS) - 1


def resolve(importer: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not is_pkg:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(mods: dict[str, Path]) -> dict[str, list[tuple[str, list[str], int]]]:
    """Each module's imports of the package: (module, names taken, line)."""
    out: dict[str, list[tuple[str, list[str], int]]] = defaultdict(list)
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        is_pkg = path.name == "__init__.py"
        typing_only = {
            id(n)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
            for n in ast.walk(block)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:  # an import for the type checker alone runs nothing
                continue
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("llmcourse"):
                        out[mod].append((a.name, [], node.lineno))
            elif isinstance(node, ast.ImportFrom):
                target = resolve(mod, is_pkg, node)
                if not target.startswith("llmcourse"):
                    continue
                names = [a.name for a in node.names]
                subs = [n for n in names if f"{target}.{n}" in mods]
                if subs:  # ``from llmcourse import planner``: an import of the submodule
                    for n in subs:
                        out[mod].append((f"{target}.{n}", [], node.lineno))
                rest = [n for n in names if n not in subs]
                if rest or not subs:
                    out[mod].append((target, rest, node.lineno))
    return out


def owner(target: str, mods: dict[str, Path]) -> str | None:
    while target and target not in mods:
        target = target.rpartition(".")[0]
    return target or None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def measure() -> dict[str, list[str]]:
    """Every count of the house, as the offenders' list (a cycle, an import, a module, a function, ...)."""
    mods = modules()
    imps = imports(mods)

    graph: dict[str, set[str]] = defaultdict(set)
    upward: list[str] = []
    private: list[str] = []
    inside: list[str] = []
    for mod, rows in imps.items():
        for target, names, line in rows:
            dest = owner(target, mods)
            if dest is None or dest == mod:
                continue
            # every edge counts: a package's __init__ importing its modules, and a module importing names from its
            # own package's __init__ (a circle through the __init__ when it imports that module back)
            graph[mod].add(dest)
            if floor_of(dest) > floor_of(mod):
                upward.append(f"{mod}:{line} imports {dest}")
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    where = private if package_of(dest) != package_of(mod) or package_of(mod) == "" else inside
                    where.append(f"{mod}:{line} takes {dest}.{n}")

    # ``module._x`` attribute reads across packages
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = resolve(mod, path.name == "__init__.py", node)
                for a in node.names:
                    full = f"{target}.{a.name}"
                    if full in mods:
                        aliases[a.asname or a.name] = full
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in mods and a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                dest = aliases[node.value.id]
                if dest == mod:
                    continue
                where = private if package_of(dest) != package_of(mod) or package_of(mod) == "" else inside
                where.append(f"{mod}:{node.lineno} reads {dest}.{node.attr}")

    big: list[str] = []
    long_funcs: list[str] = []
    wide: list[str] = []
    for mod, path in mods.items():
        text = path.read_text()
        n = text.count("\n")
        if n > 900 and mod not in GENERATED:
            big.append(f"{mod} ({n} lines)")
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 100 and mod not in GENERATED:
                    long_funcs.append(f"{mod}.{node.name} ({length} lines)")
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                a = node.args
                count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                if count > 12:
                    wide.append(f"{mod}.{node.name} ({count} parameters)")

    return {
        "import cycles (imports inside functions count)": [" -> ".join(c) for c in cycles(graph)],
        "upward imports": upward,
        "hand-written modules over 900 lines": big,
        "private names taken across packages": private,
        "private names taken across modules inside a package": inside,
        "public callables over 12 parameters": wide,
        "functions over 100 lines": long_funcs,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verbose", action="store_true", help="list every offender")
    args = parser.parse_args()
    mods = modules()
    lines = sum(p.read_text().count("\n") for p in mods.values())
    print(f"modules: {len(mods)} ({lines:,} lines)")
    for label, rows in measure().items():
        print(f"{label}: {len(rows)}")
        if args.verbose:
            for r in rows:
                print(f"    {r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
