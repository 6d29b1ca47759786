"""The command line every tools/seed_sweep_<name>.py shares: run each check on each seed, one JSON line per (check, seed)."""
import argparse, ast, json, time, traceback
from pathlib import Path
import torch

def sweep_main(checks: dict, out: str, seeds=(0, 1, 2, 3, 4)):
    "checks: name -> fn(seed) -> dict (with a `margin` to the check's threshold); appends to `out` (resumable by hand: pick --checks/--seeds)."
    ap = argparse.ArgumentParser()
    ap.add_argument("--checks", nargs="+", default=list(checks)); ap.add_argument("--seeds", type=int, nargs="+", default=list(seeds))
    ap.add_argument("--out", default=out)
    a = ap.parse_args()
    torch.set_num_threads(1)
    for c in a.checks:
        for s in a.seeds:
            t0 = time.time(); rec = dict(check=c, seed=s) | checks[c](s) | dict(seconds=round(time.time() - t0, 1))
            print(json.dumps(rec), flush=True)
            with open(a.out, "a") as f: f.write(json.dumps(rec) + "\n")

def parse_overrides(s: str) -> dict:
    "One --set of a sweep: 'lr=3e-4,steps=200' -> {'lr': 0.0003, 'steps': 200} (a value that is not a Python literal stays a string)."
    out = {}
    for kv in filter(None, s.split(",")):
        k, v = kv.split("=", 1)
        try: out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError): out[k] = v
    return out

def run_key(seed, over: dict) -> str:
    "The key a resumable sweep uses to skip a (seed, setting) already in its log."
    return json.dumps([seed, sorted(over.items())])

def finished_runs(out, keys: tuple, **match) -> set:
    "The key tuples (r[k] for k in keys) of the rows already in the JSONL log `out` whose fields equal `match` (e.g. overrides=...): what a resumed sweep skips."
    out = Path(out)
    rows = [json.loads(l) for l in out.read_text().splitlines() if l.strip()] if out.is_file() else []
    return {tuple(r[k] for k in keys) for r in rows if all(r.get(k) == v for k, v in match.items())}

def sweep_parser(out: str, set_example: str = "steps=40", seeds=(0, 1, 2)) -> argparse.ArgumentParser:
    "The options every resumable sweep shares: --seeds, --set (TrainConfig overrides) and --out (its JSONL log); add the sweep's own."
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=list(seeds))
    ap.add_argument("--set", default="", help=f"TrainConfig overrides, e.g. {set_example}")
    ap.add_argument("--out", default=out)
    return ap

def parse_sweep_args(ap: argparse.ArgumentParser) -> tuple:
    "Parse a sweep's command line on one torch thread: (the arguments, the --set overrides as a dict)."
    a = ap.parse_args()
    torch.set_num_threads(1)
    return a, parse_overrides(a.set)

def run_pending(out, keys: tuple,  # the record fields that name a run, e.g. ("reward", "algo", "seed")
                cells,  # the runs to make, in order: tuples of values for `keys`
                run_one,  # run_one(*cell) -> the run's record (a JSON-serialisable dict)
                summary=None,  # summary(record) -> one line printed after each run
                keep_going: bool = False,  # a run that raises is printed and skipped (rerun to retry) instead of stopping the sweep
                **match) -> int:
    """The resume rule every sweep shares: run each cell not already in the JSONL log `out` (rows whose fields equal `match`, e.g.
    overrides=...), appending each record as soon as it finishes, so a stopped sweep loses at most the run in progress. Returns how many ran."""
    out, done, ran = Path(out), finished_runs(out, keys, **match), 0
    for cell in cells:
        cell = tuple(cell)
        if cell in done: continue
        try: rec = run_one(*cell)
        except Exception:
            if not keep_going: raise
            traceback.print_exc(); print(f"{' '.join(map(str, cell))}: FAILED, skipped (rerun to retry)", flush=True); continue
        with out.open("a") as f: f.write(json.dumps(rec) + "\n")
        ran += 1
        if summary is not None: print(summary(rec), flush=True)
    return ran

def rounded_history(hist: list, ndigits: int = 5) -> list:
    "A run's per-step (or per-epoch) metrics with floats rounded, as the sweeps store them."
    return [{k: round(v, ndigits) if isinstance(v, float) else v for k, v in h.items()} for h in hist]

def start_end(history: list, keys) -> str:
    "'key first -> last, ...' over a run's history: the progress line a sweep prints after each run."
    return ", ".join(f"{k} {history[0][k]:.3f} -> {history[-1][k]:.3f}" for k in keys)
