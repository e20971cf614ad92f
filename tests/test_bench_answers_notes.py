"""bench/answers.py rewrites its table and generated sections on each run, and keeps what was written by hand under the
table (the notes of what each stop measured and tried) and the model runs' section after them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.answers import FOOTNOTE_END, hand_written

REPO = Path(__file__).resolve().parents[1]


def test_the_notes_between_the_footnote_and_the_next_section_are_found():
    text = f"# Answers\n\n| table |\n\n{FOOTNOTE_END}\n\n**A note.** Measured by hand.\n\n- a point\n\n## demo: the loop's guarantees\n"
    assert hand_written(text) == "**A note.** Measured by hand.\n\n- a point"
    assert hand_written("# Answers\n\nno footnote here\n") == ""
    assert hand_written(f"{FOOTNOTE_END}\n\n## Targets (issue 10)\n") == ""


def test_a_rerun_keeps_the_notes_and_the_model_section(tmp_path):
    out = tmp_path / "RESULTS-answers.md"

    def run() -> str:
        subprocess.run([sys.executable, str(REPO / "bench" / "answers.py"), "--sets", "demo", "--bench-dir", str(tmp_path / "none"),
                        "--out", str(out)], check=True, capture_output=True, cwd=tmp_path)
        return out.read_text(encoding="utf-8")

    first = run()
    note = "**Stop 99: a note written by hand.** It must outlive the next run."
    model = "## With a model in the loop (`python bench/answers.py --model-run`)\n\n| a model's table |\n"
    out.write_text(first.replace(FOOTNOTE_END, f"{FOOTNOTE_END}\n\n{note}", 1) + "\n" + model, encoding="utf-8")
    second = run()
    assert note in second and second.index(FOOTNOTE_END) < second.index(note) < second.index("## Targets (issue 10)")
    assert second.count(note) == 1 and second.endswith(model)
