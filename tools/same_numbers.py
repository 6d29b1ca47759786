"""Same numbers before and after (issue 40): run fixed recipes through the `rlref train` command, each in a fresh
temporary run directory on the CPU with one thread, and hash each run's metrics.jsonl without its wall-clock fields.

    python tools/same_numbers.py --write          # record every run into tests/same_numbers.json
    python tools/same_numbers.py                  # recompute every run and compare (exit 1 on a difference)
    python tools/same_numbers.py --only testbed   # just the runs whose name contains a word
    python tools/same_numbers.py --set test       # the subset tests/test_same_numbers.py runs

The runs: the default recipe and every `arith-*` recipe for 3 steps (each with its full SFT warm start), the testbed
recipe seed 0 for 20 steps, and each `arith-*` recipe again from the testbed's shipped warm start (`QUICK`: no SFT,
rewards near 50%): the same algorithm code at a fraction of the cost, which is what the test runs with the testbed.
The hash is SHA-256 of the records with the wall-clock fields dropped, each record re-serialised with sorted keys
(key order is not a number; every float round-trips exactly through Python's json), one line each. Bitwise float
results differ across torch builds and thread counts, so the file records the torch version and threads, and a
comparison on another torch is refused."""
import argparse, hashlib, json, os, platform, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tests" / "same_numbers.json"
TIME_KEYS = {"seconds"}  # the only field that differs between two identical runs (found by running twice and diffing)
KEY_METRICS = ("reward_mean", "accuracy", "loss", "grad_norm", "entropy", "eval_accuracy")
# the cheap variant: the recipe's algorithm settings from the testbed's shipped warm start (no SFT; rewards near 50%)
QUICK = ["--warm-start", "arith2", "--task-kwargs", '{"n_digits": 2, "n_train": 5000, "n_test": 1000}',
         "--eval-limit", "100"]
DEFAULT_RECIPE = "arith-grpo"  # rlref.cli.TRAIN_DEFAULTS["recipe"]; checked when recording


def recipe_names() -> list[str]:
    "The recipe names the `rlref train` command offers."
    from rlref.cli import RECIPES, TRAIN_DEFAULTS  # the command's own list, wherever the registry lives
    assert TRAIN_DEFAULTS["recipe"] == DEFAULT_RECIPE, f"the default recipe is now {TRAIN_DEFAULTS['recipe']!r}"
    return sorted(RECIPES)


def all_runs(names: list[str]) -> list[dict]:
    "Every run of the record: name, recipe, steps, seed, extra flags, and which sets it belongs to."
    arith = [n for n in names if n.startswith("arith-")]
    runs = [dict(recipe=r, steps=3, seed=0, flags=[], sets=["full"] + (["default"] if r == DEFAULT_RECIPE else []))
            for r in arith]
    runs.append(dict(recipe="testbed", steps=20, seed=0, flags=[], sets=["full", "test"]))
    runs += [dict(recipe=r, steps=3, seed=0, flags=QUICK, sets=["quick", "test"]) for r in arith]
    for r in runs:
        tail = ["from-warm-start"] if r["flags"] else []
        r["name"] = " ".join([r["recipe"], f"steps={r['steps']}", f"seed={r['seed']}", *tail])
    return runs


def strip(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in TIME_KEYS}


def digest(records: list[dict]) -> str:
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
    return hashlib.sha256(text.encode()).hexdigest()


def environment() -> dict:
    import torch
    return dict(torch=torch.__version__, threads=1, python=platform.python_version(), machine=platform.machine(),
                device="cpu")


def run_one(run: dict, work: Path) -> list[dict]:
    "Train `run` in a fresh directory under `work` through the CLI: its metrics.jsonl records, no wall-clock fields."
    out = work / run["name"].replace(" ", "_").replace("=", "")
    env = os.environ | dict(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", RLREF_DEVICE="cpu", CUDA_VISIBLE_DEVICES="",
                            PYTHONHASHSEED="0", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-c", "import sys; from rlref.cli import main; sys.exit(main(sys.argv[1:]))",
           "train", "--recipe", run["recipe"], "--steps", str(run["steps"]), "--seed", str(run["seed"]),
           "--out", str(out), "--quiet", *run["flags"]]
    r = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{run['name']}: `rlref train` exited {r.returncode}\n{r.stdout[-2000:]}\n"
                           f"{r.stderr[-4000:]}")
    return [strip(json.loads(line)) for line in (out / "metrics.jsonl").read_text().splitlines()]


def measure(run: dict, work: Path) -> dict:
    records = run_one(run, work)
    last = records[-1]
    evals = [r["eval_accuracy"] for r in records if "eval_accuracy" in r]
    final = {k: last[k] for k in KEY_METRICS if k in last} | ({"eval_accuracy": evals[-1]} if evals else {})
    return dict(name=run["name"], recipe=run["recipe"], steps=run["steps"], seed=run["seed"], flags=run["flags"],
                sets=run["sets"], hash=digest(records), final=final, records=records)


def first_difference(old: list[dict], new: list[dict]) -> str:
    "Where two runs' records first differ, in words."
    for i, (a, b) in enumerate(zip(old, new)):
        for k in [*a, *(k for k in b if k not in a)]:       # in the order the trainer logs them
            was, now = a.get(k, "<absent>"), b.get(k, "<absent>")
            if was != now: return f"first difference at step {a.get('step', i + 1)}, {k}: recorded {was!r}, now {now!r}"
    if len(old) != len(new): return f"recorded {len(old)} records, now {len(new)}"
    return "the records are equal but the hash differs (the hashing changed)"


def compare(recorded: dict, measured: dict) -> str | None:
    "None when a run gives the recorded numbers, else a readable line of what changed."
    if recorded["hash"] == measured["hash"]: return None
    return f"{recorded['name']}: {first_difference(recorded['records'], measured['records'])}"


def load() -> dict:
    return json.loads(RECORD.read_text())


def select(runs: list[dict], subset: str | None, only: list[str] | None) -> list[dict]:
    if subset and subset != "all": runs = [r for r in runs if subset in r["sets"]]
    if only: runs = [r for r in runs if any(w in r["name"] for w in only)]
    return runs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help=f"record the runs into {RECORD.relative_to(ROOT)}")
    ap.add_argument("--set", default="all", choices=["all", "full", "quick", "test", "default"], help="which runs")
    ap.add_argument("--only", nargs="*", help="runs whose name contains one of these words")
    a = ap.parse_args(argv)
    env = environment()
    if a.write:
        runs = select(all_runs(recipe_names()), a.set, a.only)
        old = {r["name"]: r for r in load()["runs"]} if RECORD.exists() else {}
    else:
        rec = load()
        if rec["environment"]["torch"] != env["torch"]:
            print(f"recorded with torch {rec['environment']['torch']}, this is torch {env['torch']}: bitwise results "
                  "differ across builds, so there is nothing to compare (record anew with --write on the old code)")
            return 2
        runs = select(rec["runs"], a.set, a.only)
        old = {r["name"]: r for r in rec["runs"]}
    results, bad = [], []
    with tempfile.TemporaryDirectory(prefix="same-numbers-") as work:
        for run in runs:
            t0 = time.perf_counter()
            m = measure(run, Path(work))
            diff = compare(old[run["name"]], m) if run["name"] in old else "(new)"
            took = time.perf_counter() - t0
            print(f"{run['name']:50s} {m['hash'][:16]}  {took:6.1f} s  {diff or 'same'}", flush=True)
            if diff and not a.write: bad.append(diff)
            results.append(m)
    if a.write:
        kept = [r for name, r in old.items() if name not in {m["name"] for m in results}]
        order = {r["name"]: i for i, r in enumerate(all_runs(recipe_names()))}
        allruns = sorted(kept + results, key=lambda r: order.get(r["name"], len(order)))
        RECORD.write_text(json.dumps(dict(environment=env, time_keys=sorted(TIME_KEYS), runs=allruns), indent=1) + "\n")
        print(f"wrote {len(allruns)} runs to {RECORD.relative_to(ROOT)}")
        return 0
    if bad: print("different numbers:\n  " + "\n  ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
