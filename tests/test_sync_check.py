"""tools/sync_check.py (`make sync-check`) fails on an orphan module: in a copy of the project that passes the check,
deleting one notebook leaves its exported module behind in rlref/, and the check then names that module."""
import json, shutil, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _copy_project(dst: Path) -> Path:
    for name in ("settings.ini", "setup.py", "README.md"): shutil.copy(ROOT / name, dst / name)
    shutil.copytree(ROOT / "nbs", dst / "nbs", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "_artifacts"))
    # the warm starts are data: not exported, not compared
    shutil.copytree(ROOT / "rlref", dst / "rlref", ignore=shutil.ignore_patterns("__pycache__", "warm_starts"))
    return dst


def _sync_check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "sync_check.py"), "--root", str(root)],
                          capture_output=True, text=True, timeout=600)


def _default_exp(nb: Path) -> str | None:
    for c in json.loads(nb.read_text())["cells"]:
        for line in "".join(c["source"]).splitlines():
            if line.startswith("#| default_exp "): return line.split()[2]
    return None


def test_deleting_a_notebook_makes_the_sync_check_fail(tmp_path):
    root = _copy_project(tmp_path)
    r = _sync_check(root)
    assert r.returncode == 0, r.stdout + r.stderr                      # the copy itself is in sync
    nb = next(p for p in sorted((root / "nbs").glob("*.ipynb")) if _default_exp(p) == "evidence")
    module = Path("rlref", *_default_exp(nb).split(".")).with_suffix(".py")
    nb.unlink()
    assert (root / module).is_file()                                   # the orphan is still there
    r = _sync_check(root)
    assert r.returncode == 1 and f"{module.as_posix()} (no notebook exports it)" in r.stderr, r.stdout + r.stderr
