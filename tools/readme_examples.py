"""The README's examples, produced by running them: every block between `<!-- example: COMMAND -->` and
`<!-- /example -->` holds the output of COMMAND run on this checkout, in one scratch folder, in README order.

    python tools/readme_examples.py          # rewrite the README's example blocks
    python tools/readme_examples.py --check  # exit 1 and print a diff when the README is not current (a test runs this)

The scratch folder holds `notes/` and `relations.csv` (SAMPLE below: the quick start's "your own notes") and,
after the first `kg demo` example, the demo knowledge base in `.kgrag-demo`. A COMMAND is `kg …` (the real CLI,
one process each, after `KG_…=value` settings if any) or `cat FILE`; several joined by ` && ` show as a terminal
shows them. Outputs are shown as a user sees them, with the scratch folder's path and the
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
    # Documents and versions: two versions of one document (front matter `id: prd`)
    "docs/prd-v1.2.md": "---\nid: prd\nversion: v1.2\neffective: 2024-06-01\n---\n# 产品需求说明书\n\n## 范围\n\n"
                        "订单中心改版，覆盖下单、支付与退款。\n\n## 预算\n\n研发预算 80 万元，测试预算 10 万元。\n",
    "docs/prd-v1.3.md": "---\nid: prd\nversion: v1.3\neffective: 2025-01-16\n---\n# 产品需求说明书\n\n## 范围\n\n"
                        "订单中心改版，覆盖下单、支付、退款与发票。\n\n## 预算\n\n研发预算 95 万元，测试预算 12 万元。\n",
}
_DURATION = re.compile(r"\b\d+(\.\d+)? (s|ms)\b")


def run_example(command: str, workdir: Path) -> str:
    """One command's output; several joined by ` && ` are shown as a terminal shows them (`$ command`, output)."""
    if " && " in command:
        return "".join(f"$ {part}\n" + run_one(part, workdir) for part in command.split(" && "))
    return run_one(command, workdir)


def run_one(command: str, workdir: Path) -> str:
    words = shlex.split(command)
    env: dict[str, str] = {}
    while words and re.fullmatch(r"KG_[A-Z_]+=\S*", words[0]):  # `KG_TODAY=2026-02-01 kg query …`
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if words[0] == "cat":
        return (workdir / words[1]).read_text(encoding="utf-8")
    if words[0] != "kg":
        raise SystemExit(f"README example {command!r}: only `kg …` and `cat FILE` examples can be run")
    if ".kgrag-demo" in words and not (workdir / ".kgrag-demo").exists():
        _kg(["demo", "--quiet"], workdir)  # the demo knowledge base, built as the README's first command builds it
    done = _kg(words[1:], workdir, env)
    return _as_a_user_sees_it(done.stdout, workdir)


def _kg(args: list[str], workdir: Path, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")} | (extra or {})
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
