"""The install cell under every chapter's title (tools/install_cell.py): present and current everywhere, a no-op where
rlref imports, and, where it does not, a pip install of the enclosing clone or of a fresh clone, with the torch present
pinned as a constraint. Nothing is installed: subprocess.run is replaced by a recorder."""
import json, os, subprocess, sys
from pathlib import Path
import pytest, torch

ROOT = Path(__file__).resolve().parents[1]
from tools import install_cell as ic  # the repository root is on the path (pyproject.toml: pythonpath)

def test_every_chapter_has_the_current_cell_under_its_title():
    src = ic.cell_source()
    for p in ic.chapters():
        nb = json.loads(p.read_text(encoding="utf-8")); t = ic.title_index(nb)
        assert ic.install_cells(nb) == [t + 1], f"{p.name}: the install cell must be the one cell right after the title"
        assert "".join(nb["cells"][t + 1]["source"]) == src, f"{p.name}: an old install cell (python tools/install_cell.py)"
    assert "#| eval: false" in src and "#| hide" in src and "https://github.com/rlref/rlref" in src

def _code():
    return "\n".join(l for l in ic.cell_source().split("\n") if not l.startswith("#|"))

def _run(monkeypatch, importable):
    calls = []
    def fake_run(cmd, check):
        calls.append(list(cmd))
        if cmd[:2] == ["git", "clone"]: (Path(cmd[-1]) / "nbs").mkdir(parents=True)
        if "pip" in cmd: calls[-1].append(Path(cmd[cmd.index("-c") + 1]).read_text())
        return subprocess.CompletedProcess(cmd, 0)
    monkeypatch.setattr(subprocess, "run", fake_run)
    if not importable: monkeypatch.setitem(sys.modules, "rlref", None)   # `import rlref` raises ImportError
    exec(compile(_code(), "<install cell>", "exec"), {})
    return calls

def test_noop_where_rlref_imports(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert _run(monkeypatch, importable=True) == [] and os.listdir(tmp_path) == []

def test_installs_the_enclosing_clone(monkeypatch, tmp_path):
    (tmp_path / "clone" / "nbs").mkdir(parents=True); (tmp_path / "clone" / "rlref").mkdir(); (tmp_path / "clone" / "settings.ini").write_text("")
    monkeypatch.chdir(tmp_path / "clone" / "nbs")
    (cmd,) = _run(monkeypatch, importable=False)
    assert cmd[:5] == [sys.executable, "-m", "pip", "install", "-q"] and cmd[-2] == str(tmp_path / "clone")
    assert cmd[-1] == f"torch=={torch.__version__}\n"                       # the present torch, kept
    assert Path.cwd() == tmp_path / "clone" / "nbs"

def test_clones_when_alone(monkeypatch, tmp_path):
    (tmp_path / "content").mkdir(); monkeypatch.chdir(tmp_path / "content")
    clone, pip = _run(monkeypatch, importable=False)
    repo = tmp_path / "content" / "rlref-repo"
    assert clone == ["git", "clone", "--depth", "1", "https://github.com/rlref/rlref", str(repo)]
    assert pip[-2] == str(repo) and pip[-1] == f"torch=={torch.__version__}\n"
    assert Path.cwd() == repo / "nbs"                                        # chapters read ../tools/*.jsonl from here

def test_ensure_moves_and_updates(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [], "execution_count": None},
                    {"cell_type": "markdown", "source": "# T", "metadata": {}},
                    {"cell_type": "code", "source": "#| hide\n" + ic.MARK + " (old)", "metadata": {}, "outputs": [], "execution_count": None}]}
    assert ic.ensure(nb) and ic.install_cells(nb) == [2] and len(nb["cells"]) == 3
    assert not ic.ensure(nb)
    with pytest.raises(ValueError, match="Title"): ic.ensure({"cells": []})
