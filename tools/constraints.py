"""Print the tested versions of what kgrag and every one of its extras pull in, as pip constraints
(`name==version`, one a line), read from the Python environment this runs in.

    python tools/constraints.py > constraints.txt

Only the project's dependency closure is written (not whatever else the environment holds), so the file
constrains a fresh install to the versions the suite passed with. tools/update_constraints.sh re-resolves
the newest versions in a fresh virtual environment, runs the suite there and only then rewrites the file.
"""

from __future__ import annotations

import importlib.metadata as metadata
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent


def _key(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def closure(project: dict) -> dict[str, str]:
    """{normalized name: installed version} for the project's dependencies and all its extras, transitively."""
    found: dict[str, str] = {}
    extras_seen: dict[str, set[str]] = {}
    todo = [Requirement(r) for r in project["dependencies"]]
    todo += [Requirement(r) for reqs in project.get("optional-dependencies", {}).values() for r in reqs]
    while todo:
        requirement = todo.pop()
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            continue  # not installed here (an environment marker excluded it, or an extra not installed)
        key = _key(dist.metadata["Name"])
        new = set(requirement.extras) - extras_seen.get(key, set())
        if key in found and not new:
            continue
        found[key] = dist.version
        extras_seen.setdefault(key, set()).update(requirement.extras)
        wanted = extras_seen[key]
        for text in dist.requires or []:
            child = Requirement(text)
            if child.marker is not None:
                environments = [{"extra": e} for e in wanted] or [{"extra": ""}]
                if not any(child.marker.evaluate(env) for env in environments):
                    continue
            todo.append(child)
    return found


def main() -> int:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = closure(project)
    pins.pop(_key(project["name"]), None)
    print("# The versions kgrag's tests passed with (its dependencies and every extra, transitively).")
    print("# Used as `pip install -c constraints.txt -e '.[test]'`; rewritten by tools/update_constraints.sh.")
    print(f"# Python {sys.version_info.major}.{sys.version_info.minor}.")
    for name in sorted(pins):
        print(f"{name}=={pins[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
