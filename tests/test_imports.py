"""Imports inside the package point down (issue 40): no circle, no import of a higher layer, no import of another
module's private name, except the violations known today, each listed below with why. The lists only shrink: a
listed violation that is gone fails too, so whoever removes one deletes its line.

The check is this file: an `ast` walk of rlref/ that reads every `import` and `from ... import` (module-level and
inside functions; not `importlib.import_module` calls, whose target is a run-time string). Run it with
`python -m pytest tests/test_imports.py`. Its graph was compared once with an independent drawing of the code's
imports: the same single circle (trainer <-> testbed)."""
import ast
from pathlib import Path
import pytest

LIB = Path(__file__).resolve().parents[1] / "rlref"

# The layers of issue 40's sketch, for today's module names (lower numbers are lower; an import may point to its own
# layer or below). One deviation from the sketch's order: plain data (tasks, rewards) sits below the models, as the
# issue's own list of wrong-way imports (tasks -> models) requires; evaluation that needs a model (greedy_completions,
# exact_match) belongs above models, with sampling. The methods sit below the instruments (testbed, compare, bench):
# "mechanisms only; arms and sweeps live in the experiment layer", so a method importing the testbed points up.
LAYERS = {
    "flow": 0, "methods": 0,                                        # the sub-packages' __init__ files: empty
    "core": 0, "rundirs": 0, "evidence": 0,                         # seeding, masked ops, statistics; run dirs
    "tasks": 1, "rewards": 1, "flow.rewards": 1,                    # data: tasks, rewards, answer parsing
    "models": 2, "real_model": 2, "flow.model": 2,                  # models: tokenizers, presets, load_policy
    "rollout": 3, "fused": 3, "kvcache": 3, "evaluation": 3,       # sampling: rollout, fused forward, kv caches, eval
    "advantages": 4, "losses": 4, "flow.rl": 4, "algorithms": 4,    # algos: advantages, losses, the algorithm registry
    "trainer": 5, "warm_start": 5,                                  # train: config, loop, precision, checkpoints
    "train": 5, **{f"train.{m}": 5 for m in ("config", "precision", "parallel", "checkpoints", "rewards", "report")},
    "vision": 6, "flow.hacking": 6,                                 # methods/, images/: mechanisms
    **{f"methods.{m}": 6 for m in ("data_efficiency", "entropy", "error_counting", "judges", "logit_averaging",
                                   "pipo", "prpo", "rank1", "replay", "sparse_rollouts")},
    "testbed": 7, "compare": 7, "bench": 7,                         # instruments, above train/ and the methods
    "cli": 8, "onramp": 8,                                          # entry points
}
# Names whose layer is not their module's: code that lives too low today (an import of it counts at this layer).
SYMBOL_LAYERS = {
    "models.sft_warm_start": LAYERS["trainer"],   # an SFT training loop: train/, not models
}
GENERATED = {"_modidx"}

# Known violations (issue 40, checked against the graph): (importer, imported module or module.name) -> what is taken.
ALLOWED_UPWARD = {
}
ALLOWED_PRIVATE = {
}
ALLOWED_CIRCLES = [
]


def module_name(path: Path, lib: Path) -> str:
    rel = path.relative_to(lib).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def import_graph(lib: Path = LIB, package: str = "rlref") -> dict[str, dict[str, set[str]]]:
    "module -> {imported module -> the names taken from it ('*' for a plain `import`)}, for the package's own modules."
    paths = {module_name(p, lib): p for p in sorted(lib.rglob("*.py")) if "__pycache__" not in p.parts}
    paths = {m: p for m, p in paths.items() if m and m not in GENERATED}
    graph = {}
    for mod, path in paths.items():
        is_pkg = path.name == "__init__.py"
        here = mod.split(".") if is_pkg else mod.split(".")[:-1]         # the package a relative import starts from
        edges = graph.setdefault(mod, {})
        def add(target: str, name: str):
            if target in paths and target != mod: edges.setdefault(target, set()).add(name)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == package or a.name.startswith(package + "."): add(a.name[len(package) + 1:], "*")
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - (node.level - 1)] + (node.module.split(".") if node.module else [])
                elif node.module == package or (node.module or "").startswith(package + "."):
                    base = node.module.split(".")[1:]
                else: continue
                target = ".".join(base)
                for a in node.names:
                    sub = f"{target}.{a.name}".strip(".")
                    if sub in paths: add(sub, "*")                      # `from . import module`
                    else: add(target, a.name)
    return graph


def circles(graph: dict[str, dict]) -> list[set[str]]:
    "The strongly connected groups of more than one module (Tarjan's algorithm)."
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on.discard(w)
                group.add(w)
                if w == v: break
            if len(group) > 1: out.append(group)
    for v in sorted(graph):
        if v not in index: visit(v)
    return out


def upward(graph: dict[str, dict], layers: dict, symbol_layers: dict) -> dict[tuple, set[str]]:
    "(importer, imported) -> names, for each import of a higher layer; a name in symbol_layers counts as `module.name`."
    out = {}
    for src, edges in graph.items():
        for dst, names in edges.items():
            for name in names:
                key = f"{dst}.{name}"
                target, level = (key, symbol_layers[key]) if key in symbol_layers else (dst, layers[dst])
                if level > layers[src]: out.setdefault((src, target), set()).add(name)
    return out


def private(graph: dict[str, dict]) -> dict[tuple, set[str]]:
    "(importer, module.name) for every import of another module's underscore name."
    return {(src, f"{dst}.{n}"): {n} for src, edges in graph.items() for dst, names in edges.items()
            for n in names if n.startswith("_") and not n.startswith("__")}


@pytest.fixture(scope="module")
def graph(): return import_graph()


def test_every_module_has_a_layer(graph):
    assert not set(graph) - set(LAYERS), f"declare the layer of {sorted(set(graph) - set(LAYERS))} in LAYERS"
    assert not set(LAYERS) - set(graph), f"LAYERS names modules that are gone: {sorted(set(LAYERS) - set(graph))}"


def test_no_new_circle_and_no_stale_one(graph):
    found = circles(graph)
    new = [c for c in found if c not in ALLOWED_CIRCLES]
    gone = [c for c in ALLOWED_CIRCLES if c not in found]
    assert not new, f"import circles: {[sorted(c) for c in new]}"
    assert not gone, f"these circles are gone; remove them from ALLOWED_CIRCLES: {[sorted(c) for c in gone]}"


def test_imports_point_down_but_for_the_known_ones(graph):
    found = upward(graph, LAYERS, SYMBOL_LAYERS)
    new = {k: sorted(v) for k, v in found.items() if k not in ALLOWED_UPWARD}
    gone = sorted(set(ALLOWED_UPWARD) - set(found))
    lines = [f"{s} (layer {LAYERS[s]}) imports {sorted(names)} from {d} (layer "
             f"{SYMBOL_LAYERS.get(d, LAYERS.get(d))})" for (s, d), names in new.items()]
    assert not new, "imports that point up a layer:\n  " + "\n  ".join(lines)
    assert not gone, f"these upward imports are gone; remove them from ALLOWED_UPWARD: {gone}"


def test_no_import_of_another_modules_private_name(graph):
    found = private(graph)
    assert not set(found) - set(ALLOWED_PRIVATE), f"private names imported: {sorted(set(found) - set(ALLOWED_PRIVATE))}"
    gone = sorted(set(ALLOWED_PRIVATE) - set(found))
    assert not gone, f"these private imports are gone; remove them from ALLOWED_PRIVATE: {gone}"


def test_the_checks_can_fail(tmp_path):
    "A synthetic package: a function-level import closing a circle, an upward import and a private one are all seen."
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "low.py").write_text("import os\n\ndef f():\n    from .high import g  # function-level\n    return g\n")
    (pkg / "high.py").write_text("from pkg.low import f\nfrom .sub.leaf import _hidden\n")
    (pkg / "sub" / "leaf.py").write_text("_hidden = 1\n")
    (pkg / "sub" / "other.py").write_text("from .. import low\n")
    g = import_graph(pkg, "pkg")
    assert g["low"] == {"high": {"g"}} and g["sub.other"] == {"low": {"*"}}
    assert g["high"] == {"low": {"f"}, "sub.leaf": {"_hidden"}}
    assert circles(g) == [{"low", "high"}]
    assert circles({"a": {"b": set()}, "b": {"c": set()}, "c": {}}) == []
    layers = {"low": 0, "sub.leaf": 1, "high": 2, "sub": 0, "sub.other": 1}
    assert upward(g, layers, {}) == {("low", "high"): {"g"}}
    assert upward(g, layers, {"low.f": 3}) == {("low", "high"): {"g"}, ("high", "low.f"): {"f"}}
    assert private(g) == {("high", "sub.leaf._hidden"): {"_hidden"}}
