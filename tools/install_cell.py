"""The install cell every chapter carries right under its title, so that it runs on Colab or in a fresh Jupyter.

    python tools/install_cell.py            # insert it (or bring it up to date) in every chapter of nbs/, then run nbdev_clean
    python tools/install_cell.py --check    # exit 1 when a chapter lacks it or holds an old version

What the cell does, in order:
- `import rlref` works (the project's venv, `make install`, any environment that has it): nothing. That is the case
  under nbdev_test and pytest; besides, `#| eval: false` makes nbdev_test and nbdev_docs skip the cell, and `#| hide`
  keeps it out of the docs and the book.
- the notebook sits in a clone (`../settings.ini` and `../rlref/` exist): pip installs that clone;
- otherwise (Colab: a lone notebook in /content): `git clone --depth 1` the repository (settings.ini's git_url) into
  ./rlref-repo, `os.chdir` into its nbs/ (chapters read logs under ../tools), and pip installs it from there.
The torch already present is passed to pip as a constraint (`torch==<its version>`): pip keeps it, or stops with a
conflict when rlref's `torch>=2.6` rules it out; it never replaces it. Where torch is absent pip picks one. The install
is not editable, so the running kernel imports it at once (an editable install's .pth is read only at start-up).
"""
from __future__ import annotations
import argparse, configparser, json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = "# Colab or a fresh environment: install rlref"

def cell_source(git_url: str | None = None) -> str:
    "The install cell's source, cloning `git_url` (settings.ini's by default)."
    if git_url is None:
        cfg = configparser.ConfigParser(delimiters=["="]); cfg.read(ROOT / "settings.ini", encoding="utf-8"); git_url = cfg["DEFAULT"]["git_url"]
    return f'''#| hide
#| eval: false
{MARK} when it is not importable (a no-op in the project's venv). From the clone
# this notebook sits in, else from a fresh clone whose nbs/ becomes the working folder; the torch already present is
# kept (pinned as a pip constraint), never replaced. See tools/install_cell.py.
try: import rlref
except ImportError:
    import os, subprocess, sys, tempfile
    from pathlib import Path
    repo = Path("..").resolve()
    if not ((repo / "settings.ini").exists() and (repo / "rlref").is_dir()):
        repo = Path("rlref-repo").resolve()
        if not repo.exists(): subprocess.run(["git", "clone", "--depth", "1", "{git_url}", str(repo)], check=True)
        os.chdir(repo / "nbs")
    try: import torch; pins = f"torch=={{torch.__version__}}\\n"
    except ImportError: pins = ""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f: f.write(pins)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-c", f.name, str(repo)], check=True)'''

# Pages of the book that hold no code to run, so no install cell: the bibliography is a list of references.
WITHOUT_CODE = {"98_bibliography"}

def chapters(nbs: Path = ROOT / "nbs") -> list[Path]:
    "The chapters that get the install cell: every notebook but the landing page and the pages without code."
    skip = {"index"} | WITHOUT_CODE
    return sorted(p for p in nbs.glob("*.ipynb") if p.stem not in skip and not p.name.startswith(("_", ".")))

def title_index(nb: dict) -> int:
    i = next((i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown" and "".join(c["source"]).lstrip().startswith("# ")), None)
    if i is None: raise ValueError("a chapter starts with a markdown cell '# Title'")
    return i

def install_cells(nb: dict) -> list[int]:
    return [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and MARK in "".join(c["source"])]

def ensure(nb: dict, src: str | None = None) -> bool:
    "Put the install cell right after the title of `nb` (replacing an old one). Returns whether `nb` changed."
    src = src or cell_source(); at = install_cells(nb); t = title_index(nb)
    if at == [t + 1] and "".join(nb["cells"][t + 1]["source"]) == src: return False
    for i in reversed(at): del nb["cells"][i]
    t = title_index(nb)
    nb["cells"].insert(t + 1, {"cell_type": "code", "execution_count": None, "id": "install-rlref", "metadata": {}, "outputs": [], "source": src.splitlines(keepends=True)})
    return True

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only report chapters without the current install cell")
    a = ap.parse_args(argv)
    src, bad = cell_source(), []
    for p in chapters():
        nb = json.loads(p.read_text(encoding="utf-8"))
        if ensure(nb, src):
            bad.append(p.name)
            if not a.check: p.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if a.check and bad: sys.exit("no current install cell under the title: " + ", ".join(bad))
    print(("updated: " + ", ".join(bad)) if bad and not a.check else "every chapter has the install cell")

if __name__ == "__main__":
    main()
