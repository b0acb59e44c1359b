"""`manage.py verify_demo`: check the seeded demo jobs reached the states they should."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from newsletter.demo import Manifest, verify


class Command(BaseCommand):
    help = "Read the jobs listed by `seed_demo --manifest` back from Redis and check each."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("manifest", type=Path, help="file written by seed_demo --manifest")

    def handle(self, *args: Any, manifest: Path, verbosity: int, **options: Any) -> None:
        """Print one line per check; fail if any check does not hold."""
        checks = verify(Manifest.loads(manifest.read_text(encoding="utf-8")))
        failed = [check for check in checks if not check.ok]
        for check in checks:
            if verbosity > 1 or not check.ok:
                mark = "ok  " if check.ok else "FAIL"
                self.stdout.write(f"{mark} {check.what}: {check.detail}")
        if failed:
            raise CommandError(f"{len(failed)} of {len(checks)} demo checks failed")
        self.stdout.write(f"All {len(checks)} demo checks passed.")
