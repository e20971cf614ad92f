"""Regressions of `kg pack add ID FOLDER`: it copied what symlinks point at (`copytree(symlinks=False)`), so a
link to a secret outside the folder was ingested and served; a relative `--data-dir` (the default `./.kgrag`
included) was a `ValueError` traceback; `/etc` as the folder was a `shutil.Error` traceback; `git clone` got
the URL without `--`, so an origin starting with a dash was read as an option. Real CLI, its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _kg(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kg.cli", *args], cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", check=False, timeout=600)


def _pack(tmp_path: Path) -> Path:
    pack = tmp_path / "pack"
    (pack / "guides").mkdir(parents=True)
    (pack / "guides" / "osprey.md").write_text("# Osprey\n\nThe osprey runbook restarts the heron queue.\n", encoding="utf-8")
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nhunter2 kingfisher\n", encoding="utf-8")
    os.symlink(secret, pack / "passwd.md")  # leads out of the pack folder
    os.symlink(pack / "guides" / "osprey.md", pack / "alias.md")  # an absolute link inside it
    os.symlink("guides", pack / "more")  # a folder link inside it
    return pack


@pytest.mark.parametrize("data_dir", [["--data-dir", "kb"], []])  # relative, and the default ./.kgrag
def test_links_stay_links_inside_and_are_left_out_outside(tmp_path, data_dir):
    _pack(tmp_path)
    done = _kg("pack", "add", "birds", "pack", "--json", *data_dir, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["documents"] == 1
    assert f"not copied: {tmp_path / 'pack' / 'passwd.md'}: a symlink to {tmp_path / 'secret.md'}, outside the pack folder" \
        in report["notes"]
    copy = tmp_path / (data_dir[1] if data_dir else ".kgrag") / "packs" / "birds"
    assert not (copy / "passwd.md").exists() and not (copy / "passwd.md").is_symlink()
    assert (copy / "alias.md").is_symlink() and (copy / "alias.md").resolve() == (copy / "guides" / "osprey.md").resolve()
    assert (copy / "more").is_symlink() and (copy / "more").resolve() == (copy / "guides").resolve()
    hits = json.loads(_kg("query", "kingfisher hunter2", "--json", *data_dir, cwd=tmp_path).stdout)["hits"]
    assert hits == []
    hits = json.loads(_kg("query", "osprey heron", "--json", *data_dir, cwd=tmp_path).stdout)["hits"]
    assert [Path(h["source"]).name for h in hits] == ["osprey.md"]
    listed = _kg("pack", "list", *data_dir, cwd=tmp_path)
    assert f"from: {tmp_path / 'pack'}" in listed.stdout  # kept absolute: `kg pack update` works from anywhere
    kb = str(tmp_path / (data_dir[1] if data_dir else ".kgrag"))
    updated = _kg("pack", "update", "birds", "--json", "--data-dir", kb, cwd=tmp_path / "pack")
    assert updated.returncode == 0, updated.stderr[-3000:]


@pytest.mark.skipif(not Path("/etc").is_dir(), reason="no /etc on this system")
def test_etc_as_a_pack_folder_is_reported_not_a_traceback(tmp_path):
    done = _kg("pack", "add", "etc", "/etc", "--data-dir", "kb", cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode in (0, 2), done.stderr[-3000:]
    if done.returncode == 0:
        assert "not copied: /etc/" in done.stdout
    else:
        assert done.stderr.startswith("error: the pack 'etc' has no Markdown or text files")
    assert "root:x:0:0" not in _kg("query", "root x 0 0 bash", "--data-dir", "kb", cwd=tmp_path).stdout


def test_an_origin_starting_with_a_dash_is_a_repository_not_an_option(tmp_path):
    marker = tmp_path / "PWNED"
    origin = f"--upload-pack=touch {marker};.git"
    done = _kg("pack", "add", "--data-dir", "kb", "--", "x", origin, cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"fatal: repository '{origin}' does not exist" in done.stderr
    assert not marker.exists()
