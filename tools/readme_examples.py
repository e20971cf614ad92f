"""The README's examples, produced by running them: every block between `<!-- example: COMMAND -->` and
`<!-- /example -->` holds the output of COMMAND run on this checkout, in one scratch folder, in README order.

    python tools/readme_examples.py          # rewrite the README's example blocks
    python tools/readme_examples.py --check  # exit 1 and print a diff when the README is not current (a test runs this)

The scratch folder holds `notes/` and `relations.csv` (SAMPLE below: the quick start's "your own notes") and,
after the first `kg demo` example, the demo knowledge base in `.kgrag-demo`. A COMMAND is `kg …` (the real CLI,
one process each) or `cat FILE`. Outputs are shown as a user sees them, with the scratch folder's path and the
package's demo folder written as relative paths and a duration written as `…`.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"(<!-- example: (?P<command>.+?) -->\n```(?P<lang>[a-z]*)\n)(?P<output>.*?)(```\n<!-- /example -->)", re.S)

SAMPLE = {
    "notes/billing-db.md": "# billing-db\n\nThe billing database: PostgreSQL 15 on db-03, backed up every night at 02:00.\n"
                           "Failover to db-04 takes about two minutes; writes fail meanwhile.\n",
    "notes/invoices.md": "# invoice-service\n\nGenerates the monthly invoices on the 1st at 06:00 and mails them to customers.\n"
                         "If a run stops half way, run it again with `invoicectl rerun --month 2024-05`.\n",
    "notes/oncall.md": "# On-call\n\nPage the platform team first. Escalate to the database owner after 15 minutes.\n",
    "relations.csv": "source,relation,target,source_type,target_type\ninvoice-service,dependsOn,billing-db,Service,Database\n",
}
_DURATION = re.compile(r"\b\d+(\.\d+)? (s|ms)\b")


def run_example(command: str, workdir: Path) -> str:
    words = shlex.split(command)
    if words[0] == "cat":
        return (workdir / words[1]).read_text(encoding="utf-8")
    if words[0] != "kg":
        raise SystemExit(f"README example {command!r}: only `kg …` and `cat FILE` examples can be run")
    if ".kgrag-demo" in words and not (workdir / ".kgrag-demo").exists():
        _kg(["demo", "--quiet"], workdir)  # the demo knowledge base, built as the README's first command builds it
    done = _kg(words[1:], workdir)
    return _as_a_user_sees_it(done.stdout, workdir)


def _kg(args: list[str], workdir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run([sys.executable, "-m", "kg.cli", *args], cwd=workdir, env=env, capture_output=True,
                          text=True, encoding="utf-8", check=False)
    if done.returncode != 0:
        raise SystemExit(f"README example `kg {shlex.join(args)}` failed ({done.returncode}):\n{done.stderr}")
    return done


def _as_a_user_sees_it(text: str, workdir: Path) -> str:
    text = text.replace(str(workdir.resolve()) + os.sep, "").replace(str(workdir) + os.sep, "")
    text = text.replace(str(ROOT / "kg" / "demo") + os.sep, "kg/demo/")
    text = _DURATION.sub(lambda m: "… " + m.group(2), text)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def render(readme: str, workdir: Path) -> str:
    for name, text in SAMPLE.items():
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text(text, encoding="utf-8")
    return BLOCK.sub(lambda m: m.group(1) + run_example(m.group("command"), workdir) + m.group(5), readme)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    current = README.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="kgrag-readme-") as scratch:
        rendered = render(current, Path(scratch))
    if rendered == current:
        print(f"README.md: {len(BLOCK.findall(current))} examples, all current")
        return 0
    if check:
        sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), rendered.splitlines(True),
                                                   "README.md", "README.md as the examples print it"))
        print("\nREADME.md is not current: run `python tools/readme_examples.py` (or `make readme`)")
        return 1
    README.write_text(rendered, encoding="utf-8")
    print(f"README.md: {len(BLOCK.findall(rendered))} examples rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
