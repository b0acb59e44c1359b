"""The enqueue path: no import circle through it, and every put built by `core.submission`.

The import graph is read from the source (`ast`): every `import` counts, at module level,
inside a function or under `TYPE_CHECKING`, and importing a module counts as importing
each package above it too (Python runs their `__init__` first).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "django_qless"

#: The modules of the enqueue path, from the caller's API to the outbox and the sweep.
ENQUEUE_PATH = [
    "django_qless.bulk",
    "django_qless.decorators",
    "django_qless.definitions",
    "django_qless.immediate",
    "django_qless.job_spec",
    "django_qless.registry",
    "django_qless.enqueue",
    "django_qless.enqueue.announce",
    "django_qless.enqueue.calls",
    "django_qless.enqueue.dispatch",
    "django_qless.enqueue.observers",
    "django_qless.enqueue.request",
    "django_qless.core.submission",
    "django_qless.outbox",
    "django_qless.outbox.commit",
    "django_qless.outbox.delivery",
    "django_qless.outbox.entries",
    "django_qless.outbox.sweeper",
    "django_qless.tasks",
    "django_qless.tasks.backend",
    "django_qless.tasks.bulk",
]
#: The one circle that touches the path, outside it: the backend reads results through
#: `resolve_task`, which checks that a task's backend is a `QlessBackend`.
KNOWN = [["django_qless.tasks.backend", "django_qless.tasks.resolve"]]
#: Where a put's command may be built: the builder, and the client's own `Queue.put` and
#: `Job.requeue`.
PUT_BUILDERS = {"core/submission.py", "core/queue.py", "core/job.py", "core/commands.py"}


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules `name` imports, with every package above them."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, node.module] if node.module else base)
            if not node.level:
                module = node.module or ""
            # `from pkg import name` imports the submodule `pkg.name` when there is one.
            targets |= {f"{module}.{alias.name}" for alias in node.names} | {module}
    edges = set()
    for target in targets:
        parts = target.split(".")
        edges |= {".".join(parts[:end]) for end in range(2, len(parts) + 1)}
    # A module's own packages are already being imported when it runs: no edge back.
    return {e for e in edges if e in known and e != name and not name.startswith(e + ".")}


def cycles(graph: dict[str, set[str]]) -> Iterator[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(node: str) -> Iterator[set[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                yield from visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                yield component

    for node in sorted(graph):
        if node not in index:
            yield from visit(node)


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    # Guards the check below: these edges are a function-level import, a TYPE_CHECKING one
    # and a package's `__init__` run before its module.
    graph = import_graph()
    assert "django_qless.outbox.commit" in graph["django_qless.enqueue.dispatch"]
    assert "django_qless.outbox.delivery" in graph["django_qless.enqueue.dispatch"]
    assert "django_qless.tasks" in graph["django_qless.enqueue.announce"]
    assert set(ENQUEUE_PATH) <= set(graph)


def test_no_import_circle_runs_through_the_enqueue_path() -> None:
    # definitions, bulk, registry and outbox/entries imported each other once, and so did
    # tasks/backend and tasks/bulk: no two modules of the path are on one circle, and no
    # other circle reaches the path.
    found = [sorted(component) for component in cycles(import_graph())
             if component & set(ENQUEUE_PATH)]
    assert found == KNOWN


def test_no_put_is_built_outside_the_builder() -> None:
    # `put` and `put_if_absent` commands come from `core.submission.put_commands` only.
    builders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in ("put", "put_if_absent")
                    and isinstance(node.value, ast.Name) and node.value.id == "commands"
                    and where not in PUT_BUILDERS):
                builders.append(f"{where}:{node.lineno}")
    assert builders == []
