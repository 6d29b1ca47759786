"""Exercises (the convention in tools/student_view.py): every chapter's `## Exercises` section has 2-4
numbered exercises at two or more levels, each with a `# CHECK exercise N` cell, balanced solution markers, and a
student view that no longer holds the solution lines; on a tiny notebook, the checks pass on the solutions and fail
on the student view. Nothing here runs a kernel: the synthetic notebook's cells are exec'd."""
import json, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
from tools import student_view as sv  # the repository root is on the path (pyproject.toml: pythonpath)

CHAPTERS = sorted(p for p in (ROOT / "nbs").glob("*.ipynb") if p.stem != "index" and not p.name.startswith(("_", ".")))
def _load(p): return json.loads(p.read_text(encoding="utf-8"))
WITH = [p for p in CHAPTERS if sv.exercises_start(_load(p)) is not None]

# Chapters that had no `## Exercises` section when the convention was introduced. A chapter may leave this set (by
# getting exercises), none may join it: a new chapter comes with exercises, and a chapter cannot lose them.
WITHOUT_EXERCISES_YET = {"90_appendix_rollout_systems",   # appendices of systems detail moved out of 03 and 07
                         "94_appendix_precision_memory", "95_appendix_data_parallel", "96_appendix_checkpoints",
                         "96a_appendix_rewards", "96b_appendix_report"}   # every other chapter has exercises
# Pages that are references, not lessons: nothing to practise, so no exercises (and no code at all).
REFERENCE_PAGES = {"98_bibliography"}

def test_chapters_without_exercises_are_known():
    lacking = sorted(p.stem for p in CHAPTERS if p not in WITH and p.stem not in REFERENCE_PAGES)
    print(f"\n{len(WITH)} of {len(CHAPTERS)} chapters have '## Exercises'; without: {', '.join(lacking) or 'none'}")
    assert set(lacking) == WITHOUT_EXERCISES_YET, f"chapters without '## Exercises' that should have them: {sorted(set(lacking) - WITHOUT_EXERCISES_YET)}"
    assert WITH, "no chapter has exercises"

def _check_chapter(nb, name):
    assert sv.problems(nb) == [], f"{name}: " + "; ".join(sv.problems(nb))
    student = sv.student_view(nb)
    dropped = [i for i, c in enumerate(nb["cells"]) if sv.is_solution_prose(c)]
    assert len(student["cells"]) == len(nb["cells"]) - len(dropped)
    for e in sv.exercises(nb):
        for i in e["solutions"]:
            inside, visible, secret = False, set(), set()
            for l in "".join(nb["cells"][i]["source"]).split("\n"):
                if l.strip() == sv.BEGIN: inside = True
                elif l.strip() == sv.END: inside = False
                elif l.strip(): (secret if inside else visible).add(l.strip())
            cell = student["cells"][i - sum(d < i for d in dropped)]
            view = cell["source"].split("\n")
            assert not (secret - visible) & {l.strip() for l in view}, f"{name} exercise {e['n']}: solution lines left in the student view"
            assert f'raise NotImplementedError("exercise {e["n"]}")' in view[0] + "".join(view), f"{name} exercise {e['n']}: no stub"
            assert sv.BEGIN not in cell["source"] and cell["outputs"] == [], f"{name} exercise {e['n']}: markers or outputs left"
    assert not any(sv.is_solution_prose(c) for c in student["cells"])

@pytest.mark.parametrize("path", WITH, ids=[p.stem for p in WITH])
def test_chapter_exercises_follow_the_convention(path):
    _check_chapter(_load(path), path.name)

def _nb(*cells):
    return {"cells": [dict(cell_type=t, id=f"c{i}", metadata={}, source=s, **({"outputs": [{"output_type": "stream", "name": "stdout", "text": "42\n"}],
                                                                                  "execution_count": 1} if t == "code" else {}))
                      for i, (t, s) in enumerate(cells)], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}

TINY = _nb(
    ("markdown", "# Tiny chapter"),
    ("code", "def double(x): return 2 * x"),
    ("markdown", "## Exercises"),
    ("markdown", "### Exercise 1 (understand): predict a value\nWhat is `double(21)`? Set `answer_1`."),
    ("code", "answer_1 = None\n### BEGIN SOLUTION\nanswer_1 = 42\n### END SOLUTION"),
    ("markdown", "<details><summary>Solution</summary>\n\n`2 * 21 = 42`.\n</details>"),
    ("code", "# CHECK exercise 1\nassert answer_1 == double(21), f'answer_1 is {answer_1!r}: apply double to 21'"),
    ("markdown", "### Exercise 2 (modify): triple\nWrite `triple(x)`."),
    ("code", "def triple(x):\n    \"Three times x.\"\n    ### BEGIN SOLUTION\n    y = x + double(x)\n    return y\n    ### END SOLUTION"),
    ("code", "# CHECK exercise 2\nassert [triple(k) for k in range(4)] == [0, 3, 6, 9], 'triple(k) must be 3 * k'"),
)

def _run(nb):
    "Run the code cells top to bottom in one namespace, as a teacher does with 'run all' and errors allowed: {cell index: exception or None}."
    ns, out = {}, {}
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] != "code": continue
        try: exec(compile(c["source"], f"<cell {i}>", "exec"), ns); out[i] = None
        except Exception as e: out[i] = e
    return out

def test_checks_pass_on_solutions_and_fail_on_student_view():
    assert sv.problems(TINY) == []
    assert [(e["n"], e["level"], e["solutions"], e["prose"], e["checks"]) for e in sv.exercises(TINY)] == \
        [(1, "understand", [4], [5], [6]), (2, "modify", [8], [], [9])]
    assert all(err is None for err in _run(TINY).values())                    # the solutions pass their checks
    student = sv.student_view(TINY)
    assert [c["source"].split("\n")[0] for c in student["cells"]].count("<details><summary>Solution</summary>") == 0
    assert len(student["cells"]) == len(TINY["cells"]) - 1
    assert student["cells"][4]["source"] == 'answer_1 = None\nraise NotImplementedError("exercise 1")' and student["cells"][4]["outputs"] == []
    assert student["cells"][7]["source"] == 'def triple(x):\n    "Three times x."\n    raise NotImplementedError("exercise 2")'
    res = _run(student)
    checks = {i: res[i] for i, c in enumerate(student["cells"]) if c["source"].startswith("# CHECK")}
    assert len(checks) == 2 and all(isinstance(e, (AssertionError, NotImplementedError)) for e in checks.values()), checks
    assert isinstance(res[4], NotImplementedError) and res[7] is None        # the stub cell raises; the signature cell defines triple
    assert TINY["cells"][4]["source"].count("answer_1 = 42") == 1           # the input is not modified

def test_chapter_check_on_tiny():
    _check_chapter(TINY, "tiny")
    leaky = json.loads(json.dumps(TINY)); leaky["cells"][4]["source"] = "answer_1 = 42\n### BEGIN SOLUTION\nanswer_1 = 42\n### END SOLUTION"
    _check_chapter(leaky, "leaky")       # a line shown outside the markers is not a secret...
    with pytest.raises(AssertionError, match="no '## Exercises'"): _check_chapter(_nb(("markdown", "# T")), "none")

def test_hide_solution_indentation_and_errors():
    src = "x = 1\nif x:\n        ### BEGIN SOLUTION\n\n        y = 2\n    ### END SOLUTION\nz = 3\n### BEGIN SOLUTION\n### END SOLUTION"
    assert sv.hide_solution(src, 3) == 'x = 1\nif x:\n        raise NotImplementedError("exercise 3")\nz = 3\nraise NotImplementedError("exercise 3")'
    for bad, msg in (("### BEGIN SOLUTION\nx", "without"), ("x\n### END SOLUTION", "without"), ("### BEGIN SOLUTION\n### BEGIN SOLUTION", "again")):
        with pytest.raises(ValueError, match=msg): sv.hide_solution(bad, 1)

def test_problems_are_reported():
    bad = _nb(("markdown", "# T"), ("markdown", "## Exercises"), ("markdown", "### Exercise 1 (understand): a"), ("code", "# CHECK exercise 1\nassert True"),
              ("markdown", "### Exercise 3 (guess): b"), ("code", "### BEGIN SOLUTION\nx = 1"), ("markdown", "#### Exercise 4: c"))
    p = " | ".join(sv.problems(bad))
    for want in ("exercise 3 comes at position 2", "level 'guess'", "no '# CHECK exercise 3'", "1 BEGIN vs 0 END", "is not '### Exercise N", "fewer than two"):
        assert want in p, (want, p)
    assert sv.problems(_nb(("markdown", "# T"))) == ["no '## Exercises' cell"]
    one = _nb(("markdown", "## Exercises"), ("markdown", "### Exercise 1 (modify): a"), ("code", "# CHECK exercise 1\nassert True"))
    assert sv.problems(one) == ["1 exercises (the convention: 2-4)", "fewer than two distinct levels"]

def test_cli_writes_the_student_view(tmp_path):
    src = tmp_path / "tiny.ipynb"; src.write_text(json.dumps(TINY))
    sv.main([str(src), "-o", str(tmp_path / "out" / "student.ipynb"), "--check"])
    out = json.loads((tmp_path / "out" / "student.ipynb").read_text())
    assert out == sv.student_view(TINY)
