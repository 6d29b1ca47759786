"""The book speaks to its reader and earns its conclusions in code.

- No notebook refers to the project's internals: method cards, EVIDENCE.md, issues (#N), "waves", or earlier states of the
  code or of a split. Every offending notebook and cell is listed, so one run shows all that is left to fix.
- Every research chapter (and the two core chapters that compare arms, 07a and 07b) displays a verdict table computed by
  the evidence module: a code cell calling `verdict_table(` with a displayed output. No markdown cell types a verdict by
  hand (a table row with a cell that is exactly "holds", "fails" or "not settled").
- Every method chapter cites its paper's arXiv id in its introduction, and the bibliography (98) lists every arXiv id any
  chapter cites, each entry under its own anchor.
Nothing here runs a kernel: the notebooks are read as JSON."""
import json, re
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / "nbs"
NOTEBOOKS = sorted(NBS.glob("*.ipynb"))
BIBLIOGRAPHY = NBS / "98_bibliography.ipynb"
METHOD_PREFIXES = ("10", "11", "12", "13", "14", "15", "16", "17", "18", "32", "33", "34", "35")
VERDICT_TABLE_PREFIXES = METHOD_PREFIXES + ("07a", "07b")

INTERNAL = re.compile(r"method cards?|EVIDENCE\.md|\bissues? #?\d+|\bwaves? \d|\bearlier (split|version)s?\b", re.I)
VERDICT_WORDS = {"holds", "fails", "not settled"}
ARXIV = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(?!\d)")

def _nb(p: Path) -> dict: return json.loads(p.read_text(encoding="utf-8"))
def _src(c: dict) -> str: return "".join(c["source"])

def _stem(prefix: str) -> Path:
    hits = [p for p in NOTEBOOKS if re.match(rf"{re.escape(prefix)}_", p.name)]
    assert len(hits) == 1, f"expected one notebook nbs/{prefix}_*.ipynb, found {[p.name for p in hits]}"
    return hits[0]

def _output_text(c: dict) -> str:
    out = []
    for o in c.get("outputs", []):
        out.append("".join(o.get("text", "")))
        for k in ("text/plain", "text/markdown", "text/html"): out.append("".join(o.get("data", {}).get(k, "")))
    return "\n".join(out)

def internal_references(nb: dict) -> list[tuple[int, str]]:
    "(cell index, the matching text with some context) for every internal reference in a notebook's sources and outputs."
    found = []
    for i, c in enumerate(nb["cells"]):
        for text in (_src(c), _output_text(c) if c["cell_type"] == "code" else ""):
            for m in INTERNAL.finditer(text):
                found.append((i, text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ")))
    return found

def hand_typed_verdicts(nb: dict) -> list[tuple[int, str]]:
    "(cell index, row) for every markdown table row with a cell that is exactly a verdict word (emphasis ignored)."
    rows = []
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] != "markdown": continue
        for line in _src(c).split("\n"):
            if not line.strip().startswith("|"): continue
            cells = [re.sub(r"[*_`]", "", x).strip().lower() for x in line.strip().strip("|").split("|")]
            if VERDICT_WORDS & set(cells): rows.append((i, line.strip()))
    return rows

def has_displayed_verdict_table(nb: dict) -> bool:
    "A code cell that calls verdict_table( and shows what it returned (an execute_result or display_data output)."
    return any(c["cell_type"] == "code" and "verdict_table(" in _src(c)
               and any(o.get("output_type") in ("execute_result", "display_data") for o in c.get("outputs", []))
               for c in nb["cells"])

def bibliography_ids() -> dict:
    "{arXiv id: anchor} of the bibliography's entries (an entry is an anchor line followed by its text)."
    ids = {}
    for c in _nb(BIBLIOGRAPHY)["cells"]:
        for entry in re.split(r'(?=<a id=")', _src(c)):
            m = re.match(r'<a id="([^"]+)"></a>', entry)
            if m is None: continue
            for a in ARXIV.findall(entry): ids[a] = m.group(1)
    return ids

def test_the_detectors_on_literal_cells():
    cell = lambda kind, s: {"cell_type": kind, "source": s, "outputs": []} if kind == "code" else {"cell_type": kind, "source": s}
    nb = {"cells": [cell("markdown", "As the method card says"), cell("markdown", "fixed in issue #12"), cell("code", "# wave 1 did it"),
                    cell("markdown", "measured on the earlier split"), cell("markdown", "the wave of updates; 3 issues; a card game")]}
    assert [i for i, _ in internal_references(nb)] == [0, 1, 2, 3]
    table = "| claim | status |\n|---|---|\n| P1 | **Holds** |\n| P2 | not settled |\n| P3 | fails to hold here |"
    assert [r for _, r in hand_typed_verdicts({"cells": [cell("markdown", table)]})] == ["| P1 | **Holds** |", "| P2 | not settled |"]
    shown = cell("code", "verdict_table(PREDICTIONS, runs)"); shown["outputs"] = [{"output_type": "execute_result", "data": {}}]
    assert has_displayed_verdict_table({"cells": [shown]}) and not has_displayed_verdict_table({"cells": [cell("code", "verdict_table(P, r)")]})

def test_no_notebook_refers_to_project_internals():
    offending = {p.name: internal_references(_nb(p)) for p in NOTEBOOKS}
    offending = {k: v for k, v in offending.items() if v}
    report = "\n".join(f"  {name} cell {i}: ...{text}..." for name, hits in offending.items() for i, text in hits)
    assert not offending, f"{len(offending)} notebooks speak of project internals (method cards, EVIDENCE.md, issues, waves, earlier versions):\n{report}"

def test_verdicts_are_computed_never_typed():
    missing = [_stem(p).name for p in VERDICT_TABLE_PREFIXES if not has_displayed_verdict_table(_nb(_stem(p)))]
    typed = {p.name: hand_typed_verdicts(_nb(p)) for p in NOTEBOOKS}
    typed = {k: v for k, v in typed.items() if v}
    report = "\n".join(f"  {name} cell {i}: {row}" for name, rows in typed.items() for i, row in rows)
    assert not missing and not typed, (f"chapters without a displayed verdict_table(...) cell: {missing}\n"
                                       f"markdown tables that type a verdict by hand:\n{report}")

def test_method_chapters_cite_their_paper_and_the_bibliography_lists_it():
    listed, problems = bibliography_ids(), []
    for prefix in METHOD_PREFIXES:
        p = _stem(prefix)
        intro = [_src(c) for c in _nb(p)["cells"] if c["cell_type"] == "markdown"][:3]   # the title and the first prose cells
        ids = {a for s in intro for a in ARXIV.findall(s)}
        if not ids: problems.append(f"{p.name}: no arXiv id in its first three markdown cells")
        problems += [f"{p.name}: arXiv:{a} is not in the bibliography" for a in sorted(ids - set(listed))]
    assert not problems, "\n".join(problems)

def test_the_bibliography_lists_every_cited_paper_once():
    nb = _nb(BIBLIOGRAPHY)
    assert all(c["cell_type"] == "markdown" for c in nb["cells"]), "the bibliography is markdown only"
    text = "\n".join(_src(c) for c in nb["cells"])
    anchors = re.findall(r'<a id="([^"]+)"></a>', text)
    assert anchors and len(anchors) == len(set(anchors)), "every entry has its own anchor"
    cited = {}
    for p in NOTEBOOKS:
        if p == BIBLIOGRAPHY: continue
        for c in _nb(p)["cells"]:
            if c["cell_type"] == "markdown":
                for a in ARXIV.findall(_src(c)): cited.setdefault(a, p.stem)
    missing = {a: s for a, s in cited.items() if a not in bibliography_ids()}
    assert not missing, f"arXiv ids cited by chapters but missing from nbs/98_bibliography.ipynb: {missing}"
