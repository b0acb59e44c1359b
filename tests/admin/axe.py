"""axe-core for the browser tests: installed from the npm registry into a cache, run in a page.

The package is fetched once per machine (per pinned version) with the machine's npm into
`$XDG_CACHE_HOME/django-qless/axe-core-<version>` (default `~/.cache`), never into the
repository; `axe.min.js` is then injected into each page under test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: Pinned so that a new axe release cannot change the verdict of an unchanged page.
AXE_VERSION = "4.14.1"
#: The impacts the admin must never have.
BLOCKING = ("serious", "critical")


def cache_dir() -> Path:
    """Where this axe version lives once installed."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "django-qless" / f"axe-core-{AXE_VERSION}"


def script_path(root: Path) -> Path:
    """The browser build inside an install."""
    return root / "node_modules" / "axe-core" / "axe.min.js"


def unavailable(reason: str) -> None:
    """Skip on a developer's machine; fail under CI, where the tools must be there."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this is an error, not a skip)")
    pytest.skip(reason)


def install() -> Path:
    """axe.min.js, installed with npm on first use; skips (or fails under CI) without npm."""
    root = cache_dir()
    if script_path(root).is_file():
        return script_path(root)
    npm = shutil.which("npm")
    if npm is None:
        unavailable("needs npm (Node.js) to install axe-core from the npm registry")
    root.parent.mkdir(parents=True, exist_ok=True)
    # Install next to the cache and rename, so an interrupted install never looks complete.
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    command = [
        str(npm), "install", "--no-audit", "--no-fund", "--no-save", "--ignore-scripts",
        "--prefix", str(staging), f"axe-core@{AXE_VERSION}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0 or not script_path(staging).is_file():
        shutil.rmtree(staging, ignore_errors=True)
        pytest.fail(f"npm could not install axe-core@{AXE_VERSION}:\n{done.stderr[-2000:]}")
    try:
        staging.rename(root)
    except OSError:  # another run finished first: use its install
        shutil.rmtree(staging, ignore_errors=True)
    return script_path(root)


@dataclass(frozen=True)
class Violation:
    """One axe rule broken on one page, with the elements that break it."""

    page: str
    rule: str
    impact: str
    help: str
    targets: tuple[str, ...]
    #: axe's explanation for the first element (for colour contrast: the two colours).
    detail: str = ""

    def __str__(self) -> str:
        shown = ", ".join(self.targets[:5])
        detail = " ".join(self.detail.split())
        return f"{self.page}: [{self.impact}] {self.rule} ({self.help}): {shown}: {detail}"


@dataclass
class Tally:
    """What the checks saw: pages, and violations counted by impact."""

    pages: int = 0
    by_impact: Counter[str] = field(default_factory=Counter)
    #: The other violations' rules, with the number of pages each was found on.
    minor_rules: Counter[str] = field(default_factory=Counter)
    blocking: list[Violation] = field(default_factory=list)

    def add(self, found: list[Violation]) -> None:
        """Count one page's violations."""
        self.pages += 1
        for violation in found:
            self.by_impact[violation.impact] += 1
            if violation.impact in BLOCKING:
                self.blocking.append(violation)
            else:
                self.minor_rules[f"{violation.impact} {violation.rule}"] += 1

    def summary(self) -> str:
        """One line of figures."""
        impacts = ("critical", "serious", "moderate", "minor")
        counts = ", ".join(f"{self.by_impact[name]} {name}" for name in impacts)
        rules = ", ".join(f"{rule} on {pages}" for rule, pages in sorted(self.minor_rules.items()))
        shown = f" ({rules})" if rules else ""
        return f"{self.pages} pages checked; violations: {counts}{shown}"


#: (rule, CSS selector) pairs left out of the check, each for a stated reason. Empty: every
#: element of every page is checked.
EXCLUDED: tuple[tuple[str, str], ...] = ()


def run(page: Any, script: Path, label: str) -> list[Violation]:
    """Inject axe into the loaded page, run every rule, return the violations."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(script))
    result: dict[str, Any] = page.evaluate(
        "async (excluded) => { const r = await axe.run(document, {resultTypes: ['violations']});"
        " return {violations: r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " detail: v.nodes[0]?.failureSummary || '', targets: v.nodes.map(n => n.target.join(' '))"
        ".filter(t => !excluded.some(([rule, sel]) => rule === v.id"
        " && document.querySelector(t)?.matches(sel)))}))}; }",
        [list(pair) for pair in EXCLUDED],
    )
    return [
        Violation(label, item["id"], item["impact"] or "minor", item["help"],
                  tuple(item["targets"]), item["detail"])
        for item in result["violations"] if item["targets"]
    ]
