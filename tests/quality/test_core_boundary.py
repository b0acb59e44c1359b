"""Only `django_qless/core` speaks to the script: key names, command arguments and replies.

Outside core, no Python source names a `ql:` key or channel, sends a script command by
name, registers the script, or decodes replies with core's private helpers.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "django_qless"
CORE = PACKAGE / "core"
#: Modules of core that only core itself may use.
CORE_INTERNALS = ("replies", "script", "records", "batch")


def outside_core() -> Iterator[Path]:
    """Every Python module of the package that is not in core."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if CORE not in path.parents:
            yield path


def command_names() -> set[str]:
    """The script command names, as `core/commands.py` builds them."""
    tree = ast.parse((CORE / "commands.py").read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "Command" and node.args):
            # The name may be chosen by an expression (`"requeue" if ... else "put"`).
            names |= {leaf.value for leaf in ast.walk(node.args[0])
                      if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str)}
    return names


def test_the_command_table_is_read() -> None:
    # Guards the checks below: an empty set would let every raw call through.
    assert {"put", "pop", "complete", "recur.update", "config.get"} <= command_names()


def test_no_qless_key_or_channel_is_spelled_outside_core() -> None:
    found = []
    for path in outside_core():
        source = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.STRING, tokenize.COMMENT) and "ql:" in token.string:
                found.append(f"{path.relative_to(PACKAGE)}:{token.start[0]}")
    assert found == []


def test_no_script_command_is_sent_by_name_outside_core() -> None:
    names = command_names()
    found = []
    for path in outside_core():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if raw_command(node, names) or registers_script(node):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []


def test_no_reply_is_decoded_outside_core() -> None:
    found = []
    for path in outside_core():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and imports_core_internal(node):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []


def raw_command(node: ast.AST, names: set[str]) -> bool:
    """`x.call("put", ...)`, or a `("put", [args])` pair built by hand."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        first = node.args[0] if node.args else None
        return node.func.attr == "call" and is_name(first, names)
    if isinstance(node, ast.Tuple) and len(node.elts) == 2:
        return is_name(node.elts[0], names) and isinstance(node.elts[1], ast.List | ast.Tuple)
    return False


def registers_script(node: ast.AST) -> bool:
    """A second registration of the script, or EVALSHA or FCALL sent by hand."""
    if isinstance(node, ast.Attribute) and node.attr in (
        "register_script", "evalsha", "fcall", "function_load"
    ):
        return True
    return isinstance(node, ast.Constant) and node.value in ("EVALSHA", "evalsha", "FCALL", "fcall")


def is_name(node: ast.AST | None, names: set[str]) -> bool:
    """Whether `node` is a string literal naming a script command."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names


def imports_core_internal(node: ast.ImportFrom) -> bool:
    """`from ..core.replies import ...`, `from django_qless.core import script`, and alike."""
    module = node.module or ""
    parts = module.split(".")
    if "core" not in parts:
        return False
    below = parts[parts.index("core") + 1:]
    if below:
        return below[0] in CORE_INTERNALS
    return any(alias.name in CORE_INTERNALS for alias in node.names)
