"""Fail when a relative link or image of README.md names a file that does not exist.

mkdocs --strict checks the site's pages; the README is not one of them (it links into
docs/ as plain Markdown, for a reader of the repository), so `make docs` runs this too.
"""

import re
import sys
from pathlib import Path

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def broken(readme: Path) -> list[str]:
    """The README's relative link targets that name no file or directory."""
    root = readme.parent
    text = re.sub(r"```.*?```", "", readme.read_text(encoding="utf-8"), flags=re.S)
    bad = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, or an anchor within the README
        path = target.split("#", 1)[0]
        if not (root / path).exists():
            bad.append(target)
    return bad


if __name__ == "__main__":
    readme = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    bad = broken(readme)
    for target in bad:
        print(f"{readme}: link to a missing file: {target}", file=sys.stderr)
    sys.exit(1 if bad else 0)
