"""COURSE.md states no invented run time: its time table has one row per chapter in nbs/, and each row shows exactly the
measured row of tools/book_run_times.jsonl (formatted as the book formats it) or 'not measured'. Its dependency table
lists every chapter too."""
import re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from tools import book  # the repository root is on the path (pyproject.toml: pythonpath)

def _table(text, heading):
    part = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return {m.group(1): [c.strip() for c in m.group(2).split("|")] for m in re.finditer(r"^\| `([0-9][^`]*)` \|(.*)\|$", part, re.M)}

def test_course_tables_cover_every_chapter_and_quote_measured_times():
    text = (ROOT / "COURSE.md").read_text()
    stems = sorted(p.stem for p in (ROOT / "nbs").glob("*.ipynb") if p.stem != "index")
    times, deps, rows = _table(text, "## Time per chapter"), _table(text, "## Which chapters need which"), book.run_times()
    assert sorted(times) == stems and sorted(deps) == stems
    for stem, (wall, cpu, gpu, *_) in times.items():
        r = rows.get(stem)
        want = (book._fmt_s(r["wall_s"]), book._fmt_s(r["cpu_s"])) if r else ("not measured", "not measured")
        assert (wall, cpu) == want, (stem, wall, cpu, want)
        assert gpu == "not measured", stem      # no GPU timing exists in the repository
    assert "COURSE.md" in (ROOT / "README.md").read_text() and "COURSE.md" in (ROOT / "nbs" / "index.ipynb").read_text()
