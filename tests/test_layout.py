"""The project's layout: experiments/<chapter>/ holds every sweep and its log, tools/ holds the project's utilities only, and tests
and experiment scripts never import each other (a test runs a sweep as a process, the way a reader does)."""
import ast, re
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = {p.stem for p in (ROOT / "nbs").glob("*.ipynb")}

def _imports(path: Path) -> set[str]:
    "Top-level module names a file imports, and folders it puts on sys.path or loads a module from."
    tree, out = ast.parse(path.read_text()), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import): out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module: out.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("insert", "spec_from_file_location", "append"):
            out |= {f"path:{s.value}" for s in ast.walk(node) if isinstance(s, ast.Constant) and isinstance(s.value, str)}
    return out

def test_every_experiment_lives_in_a_chapter_folder():
    folders = [p for p in (ROOT / "experiments").iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert folders, "no experiments/ folders"
    for d in folders:
        assert d.name in CHAPTERS, f"experiments/{d.name} does not name a chapter"
        for f in d.iterdir():
            if f.name == "__pycache__": continue
            assert re.fullmatch(r"(seed_)?sweep(_[a-z0-9_]+)?\.(py|jsonl)|[a-z0-9_]+\.py", f.name), f"{f}: not the naming scheme"

def test_tools_holds_utilities_only():
    names = {p.name for p in (ROOT / "tools").iterdir() if p.is_file()}
    assert not {n for n in names if n.endswith(".jsonl")} - {"book_run_times.jsonl"}, names   # the book's measured run times only
    assert not {n for n in names if "sweep" in n} - {"sweep_runner.py"}, names

def _apart(folder: str, pattern: str, fix: str):
    "No test puts `folder` on sys.path (or loads a file from it), and no file of `folder` imports a test."
    test_modules = {p.stem for p in (ROOT / "tests").glob("*.py")} | {"tests", "conftest"}
    for t in (ROOT / "tests").glob("*.py"):
        if t.name == Path(__file__).name: continue
        bad = {i for i in _imports(t) if i.startswith("path:") and folder in i}
        assert not bad, f"{t.name} imports from {folder}/ ({bad}); {fix}"
    for e in (ROOT / folder).glob(pattern):
        imps = _imports(e)
        assert not imps & test_modules, f"{e.relative_to(ROOT)} imports a test module: {imps & test_modules}"
        bad = {i for i in imps if i.startswith("path:") and "tests" in i}
        assert not bad, f"{e.relative_to(ROOT)} puts tests/ on sys.path"

def test_tests_and_experiments_never_import_each_other():
    _apart("experiments", "*/*.py", "run the script as a process instead")

def test_tests_and_tools_never_touch_each_others_path():
    "A test imports a tool as `tools.NAME` (the root is on pytest's path), not via sys.path; no tool imports a test."
    _apart("tools", "*.py", "import it as tools.NAME")

def test_the_checker_sees_an_import():
    "The check above can fail: a file that loads an experiment script is caught."
    probe = ROOT / "tests" / "_probe_layout.py"
    try:
        probe.write_text('import importlib.util\nimportlib.util.spec_from_file_location("s", "experiments/13_replay/sweep.py")\n')
        assert any("experiments" in i for i in _imports(probe))
    finally: probe.unlink()
