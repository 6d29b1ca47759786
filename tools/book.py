"""Build the rlref book: browsable HTML from the notebooks in nbs/ and their committed outputs, offline.

    python tools/book.py                       # every notebook -> _build/book/html/index.html (what `make book` runs)
    python tools/book.py --only 00b_core 05_advantages --out /tmp/b   # the landing page and two chapters
    python tools/book.py --measure 05_advantages   # run a chapter at reader size, record its run time

Nothing is executed by a build: Sphinx + myst-nb render the stored outputs (nb_execution_mode "off"). Each notebook
is first copied into `<out>/src` with nbdev's directives removed: `#| hide` cells are dropped, every other `#| ...`
line is deleted (`#| export`, `#| default_exp`, `#| slow`), and a cell left empty is dropped; the exercises' solution code
cells (`### BEGIN SOLUTION`, see tools/student_view.py) are tagged `hide-input`, so they show collapsed behind a toggle. Under its title each
chapter gets a line with 'Open in Colab', the notebook on GitHub, how to open it in Jupyter, and its run time at
reader size as measured in tools/book_run_times.jsonl ("not measured" when it has no row there). The landing page is
nbs/index.ipynb with its '## Chapters' cell replaced by the table of contents, built from the notebooks present,
ordered by file name and grouped in parts (PARTS below). A build fails when Sphinx reports a broken page (a missing
image or document, a bad reference, a notebook that cannot be read): see BROKEN.

Math is typeset by MathJax 3, which the pages load from its CDN when they are opened (the build needs no network);
set RLREF_BOOK_MATHJAX to a local tex-mml-chtml.js to read offline.
"""
from __future__ import annotations
import argparse, configparser, copy, datetime, json, os, platform, re, resource, shutil, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_TIMES = ROOT / "tools" / "book_run_times.jsonl"

# Parts of the book, in reading order. A chapter's part comes from its number (the leading digits of its file name);
# the appendix also takes the chapters whose name says they are systems detail (GPU path, command line, benchmarks).
PARTS = ["Foundations", "Core algorithms", "Methods", "Images", "Appendix"]
APPENDIX_WORDS = ("gpu_path", "cli", "bench")

def part_of(stem: str) -> str:
    "The part of the book that the notebook `stem` (e.g. '05_advantages') belongs to."
    m = re.match(r"(\d+)", stem)
    if m is None: raise ValueError(f"notebook {stem!r}: a chapter's file name must start with its number")
    n = int(m.group(1))
    if n >= 90 or _is_appendix(stem): return "Appendix"
    if n <= 4: return "Foundations"
    if n <= 7: return "Core algorithms"
    if n <= 29: return "Methods"          # 09a_kvcache (KV compression) opens the methods, before chapter 10 that uses it
    if n <= 49: return "Images"
    return "Appendix"

def _is_appendix(stem: str) -> bool:
    name = re.sub(r"^\d+[a-z]?_", "", stem)   # '91_gpu_path' -> 'gpu_path'
    return any(name == w or name.startswith(w + "_") or name.endswith("_" + w) for w in APPENDIX_WORDS)

def chapters(nbs: Path, only=None) -> dict:
    "{part: [stem, ...]} for the chapter notebooks in `nbs` (all, or those named in `only`), by file name within a part."
    stems = sorted(p.stem for p in nbs.glob("*.ipynb") if p.stem != "index" and not p.name.startswith(("_", ".")))
    if only is not None:
        missing = [s for s in only if s not in stems]
        if missing: raise ValueError(f"--only: no notebook {', '.join(missing)} in {nbs}")
        stems = [s for s in stems if s in set(only)]
    parts = {p: [] for p in PARTS}
    for s in stems: parts[part_of(s)].append(s)
    return {p: v for p, v in parts.items() if v}

DIRECTIVE = re.compile(r"^\s*#\|")

def strip_directives(nb: dict) -> dict:
    "A copy of notebook `nb` without nbdev's directives: `#| hide` cells dropped, other leading `#|` lines deleted, empty cells dropped."
    nb = copy.deepcopy(nb); cells = []
    for c in nb["cells"]:
        lines = "".join(c["source"]).split("\n")
        if c["cell_type"] == "code":
            k = 0                                   # nbdev's directives: the cell's leading `#|` lines (blank lines between)
            while k < len(lines) and (DIRECTIVE.match(lines[k]) or not lines[k].strip()): k += 1
            if any(re.match(r"^\s*#\|\s*hide\s*$", l) for l in lines[:k]): continue
            lines = lines[k:]
            if not "\n".join(lines).strip() and not c.get("outputs"): continue
        c["source"] = "\n".join(lines)
        cells.append(c)
    nb["cells"] = cells
    return nb

SOLUTION = re.compile(r"^\s*### BEGIN SOLUTION\s*$", re.M)

def collapse_solutions(nb: dict) -> dict:
    "Tag the exercises' solution code cells (those holding `### BEGIN SOLUTION`) `hide-input`: myst-nb shows them collapsed behind a toggle."
    for c in nb["cells"]:
        if c["cell_type"] == "code" and SOLUTION.search("".join(c["source"])):
            tags = c.setdefault("metadata", {}).setdefault("tags", [])
            if "hide-input" not in tags: tags.append("hide-input")
    return nb

LINK = re.compile(r"\]\(([0-9][0-9a-z_]*)\.ipynb(#[^)]*)?\)")

def link_outside(nb: dict, built: set, repo: str, branch: str) -> dict:
    "Point markdown links to a chapter left out of this build (`--only`) at that notebook on GitHub, not a dead page."
    def fix(m):
        if m.group(1) in built: return m.group(0)
        return f"]({repo}/blob/{branch}/nbs/{m.group(1)}.ipynb{m.group(2) or ''})"
    for c in nb["cells"]:
        if c["cell_type"] == "markdown": c["source"] = LINK.sub(fix, "".join(c["source"]))
    return nb

def settings() -> configparser.SectionProxy:
    cfg = configparser.ConfigParser(delimiters=["="]); cfg.read(ROOT / "settings.ini", encoding="utf-8")
    return cfg["DEFAULT"]

def run_times(path: Path = RUN_TIMES) -> dict:
    "{notebook stem: its newest row} from the measured run times."
    rows = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip(): r = json.loads(line); rows[r["notebook"]] = r
    return rows

def _fmt_s(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.1f} min"

def run_time_text(stem: str, rows: dict) -> str:
    r = rows.get(stem)
    if r is None: return "run time at reader size: not measured yet (`python tools/book.py --measure " + stem + "` records it)"
    busy = f", load {r['load_at_start']} at start" if r.get("load_at_start") else ""
    return (f"run time at reader size: {_fmt_s(r['wall_s'])} wall, {_fmt_s(r['cpu_s'])} CPU "
            f"({r['machine']}, {r['threads']}{busy}, measured {r['date']})")

def header_cell(stem: str, cfg, rows: dict) -> dict:
    repo = cfg["git_url"].rstrip("/"); gh = repo.split("github.com/", 1)[-1]; branch = cfg.get("branch", "main")
    colab = f"https://colab.research.google.com/github/{gh}/blob/{branch}/nbs/{stem}.ipynb"
    text = (f"[Open in Colab]({colab}) · [the notebook on GitHub]({repo}/blob/{branch}/nbs/{stem}.ipynb) · "
            f"in Jupyter: `jupyter lab nbs/{stem}.ipynb` in a clone · {run_time_text(stem, rows)}")
    return {"cell_type": "markdown", "id": "book-header", "metadata": {}, "source": text}

def toc_cells(parts: dict) -> list:
    return [{"cell_type": "markdown", "id": f"book-toc-{i}", "metadata": {}, "source":
             "```{toctree}\n:caption: " + part + "\n:maxdepth: 1\n\n" + "\n".join(stems) + "\n```"}
            for i, (part, stems) in enumerate(parts.items())]

CONF = '''# Generated by tools/book.py: do not edit.
import os
project = {title!r}
author = {author!r}
copyright = {copyright!r}
extensions = ["myst_nb"]
nb_execution_mode = "off"          # render the committed outputs; never run a notebook
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]   # chapters may skip a heading level; that is style, not a broken page
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
html_theme = "sphinx_book_theme"
html_title = {title!r}
html_theme_options = {{
    "repository_url": {repo!r}, "repository_branch": {branch!r}, "path_to_docs": "nbs",
    "use_repository_button": True, "use_download_button": True,
    "launch_buttons": {{"colab_url": "https://colab.research.google.com", "notebook_interface": "jupyterlab"}},
    "home_page_in_toc": True, "show_navbar_depth": 1,
}}
html_last_updated_fmt = None
if os.environ.get("RLREF_BOOK_MATHJAX"): mathjax_path = os.environ["RLREF_BOOK_MATHJAX"]
'''

def prepare(src: Path, nbs: Path = ROOT / "nbs", only=None, times: Path = RUN_TIMES) -> dict:
    "Write the Sphinx source into `src`: conf.py, the landing page and the chapters without nbdev directives. Returns the parts."
    cfg, rows, parts = settings(), run_times(times), chapters(nbs, only)
    if src.exists(): shutil.rmtree(src)
    src.mkdir(parents=True)
    repo, built = cfg["git_url"].rstrip("/"), {s for stems in parts.values() for s in stems}
    for stems in parts.values():
        for stem in stems:
            nb = collapse_solutions(strip_directives(json.loads((nbs / f"{stem}.ipynb").read_text(encoding="utf-8"))))
            nb = link_outside(nb, built, repo, cfg.get("branch", "main"))
            first = next((i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown" and c["source"].lstrip().startswith("# ")), None)
            if first is None: raise ValueError(f"{stem}.ipynb: a chapter starts with a markdown cell '# Title'")
            nb["cells"].insert(first + 1, header_cell(stem, cfg, rows))
            (src / f"{stem}.ipynb").write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
    index = nbs / "index.ipynb"
    if index.exists():
        nb = strip_directives(json.loads(index.read_text(encoding="utf-8")))
        at = [i for i, c in enumerate(nb["cells"]) if c["source"].lstrip().startswith("## Chapters")]
        if at: nb["cells"][at[0]:at[0] + 1] = [dict(nb["cells"][at[0]], source="## Chapters")] + toc_cells(parts)
        else: nb["cells"] += toc_cells(parts)
    else:
        nb = {"cells": [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": f"# {cfg['title']}\n{cfg['description']}"}]
              + toc_cells(parts), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    nb = link_outside(nb, built, repo, cfg.get("branch", "main"))
    (src / "index.ipynb").write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
    (src / "conf.py").write_text(CONF.format(title=cfg["title"], author=cfg["author"], copyright=cfg["copyright"],
                                             repo=repo, branch=cfg.get("branch", "main")))
    return parts

# Sphinx warnings that mean a page is broken: its reader would see a hole or a dead link.
BROKEN = re.compile(r"image file not readable|image file .* not found|toctree contains reference to (nonexisting|excluded) document"
                    r"|document isn't included in any toctree|undefined label|unknown document|failed to reach any of the inventories"
                    r"|Notebook JSON is invalid|could not read|Unknown interpreted text role|Unknown directive type"
                    r"|reference target not found|mime type|Failed to|Exception|Error", re.I)

def build(out: Path, nbs: Path = ROOT / "nbs", only=None, times: Path = RUN_TIMES, quiet: bool = True) -> list:
    "Build the HTML book into `out`/html (source in `out`/src). Returns the broken-page warnings; raises if Sphinx fails."
    out = Path(out); src = out / "src"
    prepare(src, nbs, only, times)
    warn_file = out / "warnings.txt"
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-E", "-w", str(warn_file), "--keep-going", *(["-q"] if quiet else []),
           str(src), str(out / "html"), "-d", str(out / "doctrees")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    warnings = warn_file.read_text().splitlines() if warn_file.exists() else []
    if r.returncode not in (0, 1) or not (out / "html" / "index.html").exists():
        raise RuntimeError(f"sphinx failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return [w for w in warnings if "WARNING" in w or "ERROR" in w if BROKEN.search(w)]

def measure(stem: str, nbs: Path = ROOT / "nbs", timeout: int = -1, write: bool = False, times: Path = RUN_TIMES) -> dict:
    "Execute `nbs/stem.ipynb` at reader size in a fresh kernel (cwd nbs/), append its wall and kernel CPU seconds to `times`."
    import nbformat
    from nbclient import NotebookClient
    path = nbs / f"{stem}.ipynb"; nb = nbformat.read(path, as_version=4)
    probe = nbformat.v4.new_code_cell("import resource as _r; _s, _c = _r.getrusage(_r.RUSAGE_SELF), _r.getrusage(_r.RUSAGE_CHILDREN)\n"
                                      "print(_s.ru_utime + _s.ru_stime + _c.ru_utime + _c.ru_stime)")
    nb.cells.append(probe)
    env_threads = os.environ.get("OMP_NUM_THREADS")
    load = os.getloadavg()[0]
    t0 = time.time()
    NotebookClient(nb, timeout=None if timeout < 0 else timeout, kernel_name="python3", resources={"metadata": {"path": str(nbs)}}).execute()
    wall = time.time() - t0
    cpu = float(nb.cells.pop()["outputs"][0]["text"].strip())
    row = dict(notebook=stem, wall_s=round(wall, 1), cpu_s=round(cpu, 1),
               threads=f"OMP_NUM_THREADS={env_threads}" if env_threads else "default threads",
               machine=f"{os.cpu_count()}-core {platform.machine()} CPU", load_at_start=round(load, 1), date=datetime.date.today().isoformat(),
               how="tools/book.py --measure: nbclient, fresh python3 kernel, cwd nbs/, IN_TEST unset (reader size); cpu_s = the kernel's user+sys")
    with open(times, "a") as f: f.write(json.dumps(row) + "\n")
    if write: nbformat.write(nb, path)
    return row

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "_build" / "book"), help="build folder: html/ is the book")
    ap.add_argument("--only", nargs="+", help="build the landing page and these chapters only (notebook stems)")
    ap.add_argument("--measure", nargs="+", metavar="STEM", help="execute these chapters at reader size and record their run times")
    ap.add_argument("--write", action="store_true", help="with --measure: write the executed notebook back to nbs/")
    a = ap.parse_args(argv)
    if a.measure:
        for stem in a.measure: print(json.dumps(measure(stem, write=a.write)))
        return
    t = time.time()
    broken = build(Path(a.out), only=a.only, quiet=True)
    warn_file = Path(a.out) / "warnings.txt"
    others = [w for w in (warn_file.read_text().splitlines() if warn_file.exists() else []) if w.strip() and w not in broken]
    if others: print("book: Sphinx warnings (not broken pages):\n  " + "\n  ".join(others))
    print(f"book: {Path(a.out) / 'html' / 'index.html'} ({time.time() - t:.0f} s)")
    if broken:
        sys.exit("book: broken pages:\n  " + "\n  ".join(broken))

if __name__ == "__main__":
    main()
