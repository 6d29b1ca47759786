"""The student view of a chapter: its exercises without their solutions.

    python tools/student_view.py nbs/05_advantages.ipynb -o student/05_advantages.ipynb
    python tools/student_view.py nbs/05_advantages.ipynb --check      # report the exercises' structure, fail on a problem

A chapter ends with a markdown cell `## Exercises` followed by 2-4 exercises. Cells are recognised by their source
text (nbdev_clean strips cell metadata):

- question: a markdown cell whose first line is `### Exercise N (understand|modify|research): <title>`;
- solution code: a code cell with lines `### BEGIN SOLUTION` ... `### END SOLUTION` (nbgrader's markers). The student
  view replaces each marked block, markers included, by `raise NotImplementedError("exercise N")`, indented like the
  block's first line, and clears the cell's outputs (they would show the answer);
- solution prose: a markdown cell whose first line is `<details><summary>Solution</summary>`; dropped;
- check: a code cell whose first line is `# CHECK exercise N`, plain asserts a teacher runs on a student's notebook.

`student_view(nb)` and `exercises(nb)` / `problems(nb)` are importable (tests/test_exercises.py uses them).
"""
from __future__ import annotations
import argparse, copy, json, re, sys
from pathlib import Path

LEVELS = ("understand", "modify", "research")
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HEADING = re.compile(r"^###\s+Exercise\s+(\d+)\s+\(([a-z]+)\):\s*\S")   # the convention's question heading
ANY_HEADING = re.compile(r"^#{1,6}\s+Exercise\b", re.I)                   # anything that looks like one (to report bad ones)
CHECK = re.compile(r"^#\s*CHECK exercise (\d+)\s*$")
DETAILS = "<details><summary>Solution</summary>"

def _src(cell) -> str: return "".join(cell["source"])
def _first(cell) -> str: return _src(cell).lstrip("\n").split("\n", 1)[0].strip()
def is_solution_cell(cell) -> bool: return cell["cell_type"] == "code" and any(l.strip() == BEGIN for l in _src(cell).split("\n"))
def is_solution_prose(cell) -> bool: return cell["cell_type"] == "markdown" and _first(cell) == DETAILS

def exercises_start(nb) -> int | None:
    "Index of the chapter's `## Exercises` markdown cell (None when it has none)."
    return next((i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown" and re.match(r"^##\s+Exercises\s*$", _first(c))), None)

def hide_solution(source: str, n) -> str:
    "`source` with every `### BEGIN SOLUTION`...`### END SOLUTION` block replaced by `raise NotImplementedError(\"exercise n\")`."
    out, block, inside = [], [], False
    for i, line in enumerate(source.split("\n")):
        if line.strip() == BEGIN:
            if inside: raise ValueError(f"exercise {n}: {BEGIN!r} again before {END!r} (line {i + 1})")
            inside, block, begin_indent = True, [], line[:len(line) - len(line.lstrip())]
        elif line.strip() == END:
            if not inside: raise ValueError(f"exercise {n}: {END!r} without {BEGIN!r} (line {i + 1})")
            body = [l for l in block if l.strip()]
            indent = body[0][:len(body[0]) - len(body[0].lstrip())] if body else begin_indent
            out.append(f'{indent}raise NotImplementedError("exercise {n}")')
            inside = False
        elif inside: block.append(line)
        else: out.append(line)
    if inside: raise ValueError(f"exercise {n}: {BEGIN!r} without {END!r}")
    return "\n".join(out)

def student_view(nb: dict) -> dict:
    "A copy of notebook `nb` without solutions: marked solution lines become `raise NotImplementedError`, solution prose cells are dropped."
    nb = copy.deepcopy(nb); cells, n = [], None
    for i, c in enumerate(nb["cells"]):
        m = HEADING.match(_first(c)) if c["cell_type"] == "markdown" else None
        if m: n = int(m.group(1))
        if is_solution_prose(c): continue
        if is_solution_cell(c):
            if n is None: raise ValueError(f"cell {i}: a solution cell before any '### Exercise N (level): title' heading")
            c["source"] = hide_solution(_src(c), n)
            c["outputs"], c["execution_count"] = [], None
        cells.append(c)
    nb["cells"] = cells
    return nb

def exercises(nb: dict) -> list[dict]:
    "The exercises after `## Exercises`: [{n, level, title, question (cell index), solutions, prose, checks}] in order."
    start = exercises_start(nb)
    if start is None: return []
    out = []
    for i, c in enumerate(nb["cells"][start + 1:], start + 1):
        if c["cell_type"] == "markdown" and ANY_HEADING.match(_first(c)):
            m = HEADING.match(_first(c))
            out.append(dict(n=int(m.group(1)) if m else None, level=m.group(2) if m else None, title=_first(c), question=i,
                            solutions=[], prose=[], checks=[]))
        elif out and is_solution_cell(c): out[-1]["solutions"].append(i)
        elif out and is_solution_prose(c): out[-1]["prose"].append(i)
        elif out and c["cell_type"] == "code" and CHECK.match(_first(c)): out[-1]["checks"].append(i)
    return out

def problems(nb: dict) -> list[str]:
    "What breaks the exercise convention in `nb` (empty list: none). A notebook without `## Exercises` has one problem: that."
    if exercises_start(nb) is None: return ["no '## Exercises' cell"]
    ex, bad = exercises(nb), []
    if not 2 <= len(ex) <= 4: bad.append(f"{len(ex)} exercises (the convention: 2-4)")
    for k, e in enumerate(ex, 1):
        if e["n"] is None: bad.append(f"heading {e['title']!r} is not '### Exercise N (understand|modify|research): title'"); continue
        if e["n"] != k: bad.append(f"exercise {e['n']} comes at position {k}: number them 1, 2, ... in order")
        if e["level"] not in LEVELS: bad.append(f"exercise {e['n']}: level {e['level']!r} is not one of {LEVELS}")
        if not e["checks"]: bad.append(f"exercise {e['n']}: no '# CHECK exercise {e['n']}' cell")
        for i in e["checks"]:
            if int(CHECK.match(_first(nb["cells"][i])).group(1)) != e["n"]: bad.append(f"cell {i}: {_first(nb['cells'][i])!r} sits under exercise {e['n']}")
        for i in e["prose"]:
            if _src(nb["cells"][i]).rstrip().split("\n")[-1].strip() != "</details>": bad.append(f"cell {i}: a solution prose cell must end with '</details>'")
        for i in e["solutions"]:
            lines = [l.strip() for l in _src(nb["cells"][i]).split("\n")]
            if lines.count(BEGIN) != lines.count(END): bad.append(f"cell {i}: {lines.count(BEGIN)} BEGIN vs {lines.count(END)} END markers")
            else:
                try: hide_solution(_src(nb["cells"][i]), e["n"])
                except ValueError as err: bad.append(f"cell {i}: {err}")
            if "#| export" in _src(nb["cells"][i]): bad.append(f"cell {i}: an exercise cell must not be exported")
    if len({e["level"] for e in ex if e["level"] in LEVELS}) < 2: bad.append("fewer than two distinct levels")
    start = exercises_start(nb)
    stray = [i for i, c in enumerate(nb["cells"][:start]) if is_solution_cell(c) or (c["cell_type"] == "code" and CHECK.match(_first(c)))]
    if stray: bad.append(f"solution or check cells before '## Exercises': cells {stray}")
    return bad

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebook", help="a chapter, e.g. nbs/05_advantages.ipynb")
    ap.add_argument("-o", "--out", help="where to write the student notebook")
    ap.add_argument("--check", action="store_true", help="list the exercises and exit 1 when the notebook breaks the convention")
    a = ap.parse_args(argv)
    if not a.out and not a.check: ap.error("give -o OUT (write the student view) and/or --check")
    nb = json.loads(Path(a.notebook).read_text(encoding="utf-8"))
    if a.check:
        for e in exercises(nb): print(f"exercise {e['n']} ({e['level']}): question cell {e['question']}, solution cells {e['solutions']}, checks {e['checks']}")
        bad = problems(nb)
        if bad: sys.exit(f"{a.notebook}:\n  " + "\n  ".join(bad))
    if a.out:
        out = Path(a.out); out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(student_view(nb), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"student view: {out}")

if __name__ == "__main__":
    main()
