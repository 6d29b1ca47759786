"""Fail when the package is out of sync with its notebooks, or a notebook is not clean.
Runs nbdev_export and nbdev_clean on a copy of the project, so the working tree is never touched."""
import filecmp, shutil, subprocess, sys, tempfile
from pathlib import Path

root = Path(__file__).resolve().parents[1]
bin_dir = Path(sys.executable).parent
with tempfile.TemporaryDirectory() as d:
    d = Path(d)
    for name in ("settings.ini", "setup.py", "README.md"): shutil.copy(root / name, d / name)
    shutil.copytree(root / "nbs", d / "nbs", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "_artifacts"))
    shutil.copytree(root / "rlref", d / "rlref", ignore=shutil.ignore_patterns("__pycache__"))
    for cmd in ("nbdev_export", "nbdev_clean"):
        r = subprocess.run([str(bin_dir / cmd)], cwd=d, capture_output=True, text=True)
        if r.returncode: sys.exit(f"{cmd} failed:\n{r.stdout}\n{r.stderr}")
    bad = []
    for sub, pattern in (("rlref", "**/*.py"), ("nbs", "**/*.ipynb")):
        mine = {p.relative_to(root / sub) for p in (root / sub).glob(pattern) if "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts}
        theirs = {p.relative_to(d / sub) for p in (d / sub).glob(pattern) if "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts}
        for rel in sorted(mine | theirs):
            a, b = root / sub / rel, d / sub / rel
            if not (a.exists() and b.exists() and filecmp.cmp(a, b, shallow=False)): bad.append(f"{sub}/{rel}")
    if bad:
        sys.exit("out of sync (run nbdev_export and nbdev_clean, then commit):\n  " + "\n  ".join(bad))
print("sync-check: rlref/ matches its notebooks and notebooks are clean")
