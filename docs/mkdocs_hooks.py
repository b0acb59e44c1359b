"""MkDocs hook: serve docs/images/*.png (written by the admin's browser test) as images/,
and the repository's CHANGELOG.md as the page changelog.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

DOCS = Path(__file__).resolve().parent
IMAGES = DOCS / "images"
# The changelog stays at the repository root, where packaging tools and GitHub look for it.
CHANGELOG = DOCS.parent / "CHANGELOG.md"


def on_files(files: Files, config: Any) -> Files:
    """Add every screenshot so pages can link `images/<name>.png` (checked in strict mode),
    and the changelog as a generated page."""
    for image in sorted(IMAGES.glob("*.png")):
        files.append(
            File(
                f"images/{image.name}",
                src_dir=str(IMAGES.parent),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    files.append(File.generated(config, "changelog.md",
                                content=CHANGELOG.read_text(encoding="utf-8")))
    return files
