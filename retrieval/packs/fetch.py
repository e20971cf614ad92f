"""A pack's origin in, its files in DATA_DIR/packs/ID out: a local folder copied (links kept inside it, never
followed out of it) or a git repository cloned."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from kg.errors import InputError
from kg.files import masked

__all__ = ["copy_pack_folder", "fetch", "git"]

_GIT_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.I)


def fetch(origin: str, target: Path) -> tuple[str, list[str]]:
    """Copy a local folder or clone a git URL (file:// works offline) to `target`; returns "path" or "git"
    and what was left out of a copy, each with its reason."""
    target.parent.mkdir(parents=True, exist_ok=True)
    local = Path(origin).expanduser()
    if not _GIT_URL.match(origin) and not origin.endswith(".git"):
        if not local.is_dir():
            raise InputError(f"{origin}: no such folder (give a pack folder, or a git URL such as "
                             "https://host/team/pack.git or file:///path/to/repo)")
        return "path", copy_pack_folder(local, target)
    if local.is_dir():  # a local bare repository named like "pack.git"
        origin = local.resolve().as_uri()
    # `--`: an origin that starts with a dash is a repository, never an option (--upload-pack=...).
    git(["clone", "--quiet", "--depth", "1", "--", origin, str(target)], origin)
    return "git", []


def copy_pack_folder(source: Path, target: Path) -> list[str]:
    """Copy a pack folder's regular files. A symlink stays a link when it leads inside the folder and is
    left out when it leads outside (a link to /etc/passwd must not be ingested and served), as are
    FIFOs, devices, unreadable files and folders (and .git); returns what was left out and why."""
    root = source.resolve()
    left_out: list[str] = []

    def unreadable(error: OSError) -> None:
        left_out.append(f"{error.filename}: cannot be read ({error.strerror or error})")

    target.mkdir(parents=True)
    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        here = Path(dirpath)
        into = target / here.relative_to(root)
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in sorted(filenames) + [d for d in dirnames if (here / d).is_symlink()]:
            path = here / name
            problem = _copy_entry(path, into / name, root)
            if problem:
                left_out.append(f"{path}: {problem}")
        for name in [d for d in dirnames if not (here / d).is_symlink()]:
            (into / name).mkdir()
    return left_out


def _copy_entry(path: Path, dest: Path, root: Path) -> str | None:
    if path.is_symlink():
        try:
            resolved = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return "a broken or looping symlink"
        if not resolved.is_relative_to(root):
            return f"a symlink to {resolved}, outside the pack folder"
        os.symlink(os.path.relpath(resolved, path.parent.resolve()), dest)  # the same file, inside the copy
        return None
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            return "not a regular file (a FIFO, socket or device)"
        shutil.copy2(path, dest)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None


def git(args: list[str], origin: str) -> None:
    if shutil.which("git") is None:
        raise InputError("packs from git need the `git` command: install git (e.g. `apt-get install git`) or give a folder")
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=600, env=env, check=False)
    except subprocess.TimeoutExpired as exc:
        raise InputError(f"git timed out fetching {masked(origin)}") from exc
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        said = masked(message[-1]) if message else f"exit {done.returncode}"
        raise InputError(f"git could not fetch {masked(origin)}: {said}")
