"""Which files of an ingested folder the user left out: `.kgignore` files (gitignore's syntax), inside a git work tree its `.gitignore` files too, and `node_modules` / `__pycache__` folders always.

`kg ingest ~/docs-repo` should index the notes, not the site a docs generator built next to them (`site/`,
`_build/`: every page again as HTML), a package folder's thousands of READMEs or the drafts a user keeps out. Each
`.kgignore` (and `.gitignore` where git would read it) applies to the paths under its own folder, deeper files
after shallower ones, the last matching pattern deciding (`!pattern` takes a path back), as git does; the patterns
are read with pathspec's gitignore implementation. A `.gitignore` counts only inside a git work tree (a `.git` at the
folder or above it), as git itself reads it; the ones between the work tree's top and the ingested folder count
too. A file named on the command line is read whatever the rules say, and `--no-ignore` reads everything.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pathspec import GitIgnoreSpec

__all__ = ["ALWAYS_IGNORED", "IGNORE_FILE", "Ignores"]

IGNORE_FILE = ".kgignore"
ALWAYS_IGNORED = frozenset({"node_modules", "__pycache__"})  # folders that never hold anyone's notes
MAX_RULES_BYTES = 1024 * 1024  # of one rules file: what is past it is not read


def _git_top(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


class Ignores:
    """The ignore rules for the files under `root` (a resolved folder)."""

    def __init__(self, root: Path, enabled: bool = True) -> None:
        self.root = root
        self.enabled = enabled
        git = _git_top(root) if enabled else None
        self.top = git if git is not None else root  # where the rules start: the work tree's top, else the folder
        self.names = (IGNORE_FILE, ".gitignore") if git is not None else (IGNORE_FILE,)
        self._chains: dict[Path, list[tuple[str, GitIgnoreSpec]]] = {}

    def _folder_specs(self, folder: Path) -> list[GitIgnoreSpec]:
        """The rules files of `folder` (read once a folder: `_chain` keeps them)."""
        specs = []
        for name in self.names:
            try:  # a regular file, read up to a bound: a pipe or a device in its place is not waited on
                if not stat.S_ISREG(os.stat(folder / name).st_mode):
                    continue
                with open(folder / name, "rb") as f:
                    text = f.read(MAX_RULES_BYTES).decode("utf-8", errors="replace")
            except OSError:  # none there (or unreadable: nothing to obey)
                continue
            specs.append(GitIgnoreSpec.from_lines(text.splitlines()))
        return specs

    def _chain(self, folder: Path) -> list[tuple[str, GitIgnoreSpec]]:
        """The rules that apply under `folder`, shallowest first, each with its folder (as a posix prefix): once a folder."""
        if folder not in self._chains:
            above = self._chain(folder.parent) if folder != self.top and folder.is_relative_to(self.top) else []
            prefix = folder.as_posix().rstrip("/") + "/"
            self._chains[folder] = above + [(prefix, spec) for spec in self._folder_specs(folder)]
        return self._chains[folder]

    def _verdict(self, path: Path, is_dir: bool) -> bool | None:
        verdict = None
        chain = self._chain(path.parent)
        if chain:
            posix = path.as_posix() + ("/" if is_dir else "")
            for prefix, spec in chain:
                result = spec.check_file(posix[len(prefix):])
                if result.include is not None:
                    verdict = result.include
        return verdict

    def ignored(self, path: Path, is_dir: bool = False) -> bool:
        """Whether the walk leaves `path` out (its folders above it are the walk's to judge: see `ignored_file`)."""
        if not self.enabled:
            return False
        if is_dir and path.name in ALWAYS_IGNORED:
            return True
        return bool(self._verdict(path, is_dir))

    def ignored_file(self, path: Path) -> bool:
        """`path` or a folder above it (up to the root) is left out: the file is not the folder's any more."""
        if not self.enabled or not path.is_relative_to(self.root):
            return False
        if self.ignored(path):
            return True
        folder = path.parent
        while folder != self.root and folder.is_relative_to(self.root):
            if self.ignored(folder, is_dir=True):
                return True
            folder = folder.parent
        return False

