"""The book (tools/book.py, `make book`): directives stripped, chapters grouped in parts, and a real Sphinx build of the
landing page and two chapters from nbs/ that shows their stored figures and math and reports no broken page; a page
with a missing image makes the build report it. Offline, nothing executed."""
import json, os, re, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
from tools import book  # the repository root is on the path (pyproject.toml: pythonpath)

def _nb(*cells):
    return {"cells": [dict(cell_type=t, id=f"c{i}", metadata={}, source=s, **({"outputs": [], "execution_count": None} if t == "code" else {}))
                      for i, (t, s) in enumerate(cells)],
            "metadata": {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}

def test_strip_directives():
    nb = _nb(("markdown", "# T\n#| not a directive in markdown"), ("code", "#| default_exp core"), ("code", "#| export\ndef f(x): return x"),
             ("code", "#| hide\nimport nbdev; nbdev.nbdev_export()"), ("code", "#| slow\n\nf(1)  # #| in a comment stays\n#| a later line is code, not a directive"))
    out = book.strip_directives(nb)
    assert [c["source"] for c in out["cells"]] == ["# T\n#| not a directive in markdown", "def f(x): return x", "f(1)  # #| in a comment stays\n#| a later line is code, not a directive"]
    assert nb["cells"][2]["source"].startswith("#| export")          # the input is not modified

def test_parts_follow_file_names():
    assert [book.part_of(s) for s in ("00b_core", "00a_rl_in_one_page", "03_rollout", "05_advantages", "07b_testbed", "91_gpu_path",
                                      "92_cli", "93_bench", "09a_kvcache", "13_replay", "14_logit_averaging", "32_paired_flow_rl",
                                      "90_appendix_rollout_systems", "98_bibliography")] == \
        ["Foundations", "Foundations", "Foundations", "Core algorithms", "Core algorithms", "Appendix", "Appendix", "Appendix",
         "Methods", "Methods", "Methods", "Images", "Appendix", "Appendix"]
    with pytest.raises(ValueError, match="must start with its number"): book.part_of("intro")
    parts = book.chapters(ROOT / "nbs")
    assert list(parts) == [p for p in book.PARTS if p in parts] and "index" not in sum(parts.values(), [])
    stems = sorted(p.stem for p in (ROOT / "nbs").glob("*.ipynb") if p.stem != "index")
    assert sorted(sum(parts.values(), [])) == stems                    # every chapter present is in the TOC, once
    for v in parts.values(): assert v == sorted(v)

def test_book_builds_toc_and_two_chapters(tmp_path):
    times = tmp_path / "times.jsonl"
    times.write_text(json.dumps(dict(notebook="00b_core", wall_s=12.3, cpu_s=10.0, threads="OMP_NUM_THREADS=1", machine="2-core x86_64 CPU",
                                     date="2026-12-01", how="test row")) + "\n")
    broken = book.build(tmp_path / "b", only=["00b_core", "05_advantages"], times=times)
    assert broken == []
    html = tmp_path / "b" / "html"
    index, core, adv = ((html / f"{n}.html").read_text() for n in ("index", "00b_core", "05_advantages"))
    assert 'caption-text">Foundations' in index and 'caption-text">Core algorithms' in index   # the TOC, in parts
    assert 'href="00b_core.html"' in index and 'href="05_advantages.html"' in index
    for page in (core, adv):
        assert "#| export" not in page and "default_exp" not in page and "nbdev_export()" not in page
        assert "colab.research.google.com/github/rlref/rlref/blob/main/nbs/" in page
    assert "run time at reader size: 12 s wall" in core and "run time at reader size: not measured" in adv
    imgs = re.findall(r'<img[^>]+src="(_images/[^"]+\.png)"', adv)
    assert imgs and all((html / i).stat().st_size > 1000 for i in imgs)   # chapter 05's figure, from its stored output
    assert adv.count('class="math') > 5                                   # $...$ and $$...$$ become math nodes for MathJax
    assert re.search(r'<span class="k">def</span>(<span class="w">)? (</span>)?<span class="nf">group_advantages</span>', adv)  # exported code is shown

def test_broken_page_is_reported(tmp_path):
    nbs = tmp_path / "nbs"; nbs.mkdir()
    (nbs / "01_x.ipynb").write_text(json.dumps(_nb(("markdown", "# X\n![a figure](missing.png)"), ("code", "#| export\nx = 1"))))
    broken = book.build(tmp_path / "b", nbs=nbs, times=tmp_path / "none.jsonl")
    assert len(broken) == 1 and "missing.png" in broken[0], broken

def test_nbdev_docs_processing_runs(tmp_path):
    "nbdev_docs / nbdev_proc_nbs execute every cell that holds an import: cells of 02 and 07a that mixed imports with code needing earlier cells raised NameErrors there."
    script = ("import os, sys; from pathlib import Path; from nbdev.serve_drv import main; from nbdev.processors import FilterDefaults\n"
              "for n in sys.argv[1:]: main((Path('nbs') / n, Path(os.environ['OUT']) / n, FilterDefaults))")
    r = subprocess.run([sys.executable, "-c", script, "02_tasks.ipynb", "07a_trl_side_by_side.ipynb"], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "OUT": str(tmp_path), "OMP_NUM_THREADS": "1"}, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "02_tasks.ipynb").exists() and (tmp_path / "07a_trl_side_by_side.ipynb").exists()

def test_solutions_are_collapsed(tmp_path):
    "An exercise's solution code cell (### BEGIN SOLUTION) is tagged hide-input in the built copy and shows collapsed; its prose solution stays in <details>."
    nbs = tmp_path / "nbs"; nbs.mkdir()
    (nbs / "01_x.ipynb").write_text(json.dumps(_nb(("markdown", "# X"), ("code", "shown_cell = 1"), ("markdown", "## Exercises"),
                                                   ("markdown", "### Exercise 1 (understand): a value\nSet `answer_1`."),
                                                   ("code", "answer_1 = None\n### BEGIN SOLUTION\nanswer_1 = 42\n### END SOLUTION"),
                                                   ("markdown", "<details><summary>Solution</summary>\n\nIt is 42.\n</details>"),
                                                   ("code", "# CHECK exercise 1\nassert answer_1 == 42"))))
    broken = book.build(tmp_path / "b", nbs=nbs, times=tmp_path / "none.jsonl")
    assert broken == []
    src = json.loads((tmp_path / "b" / "src" / "01_x.ipynb").read_text())
    tagged = [c["source"].split("\n")[0] for c in src["cells"] if "hide-input" in c.get("metadata", {}).get("tags", [])]
    assert tagged == ["answer_1 = None"]
    page = (tmp_path / "b" / "html" / "01_x.html").read_text()
    hidden = re.search(r'<details class="[^"]*hide above-input">.*?</details>', page, re.S)
    assert hidden and "answer_1" in hidden.group(0) and "shown_cell" not in hidden.group(0)
    assert "<summary>Solution</summary>" in page and "CHECK exercise 1" in page
