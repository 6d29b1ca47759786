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
results differ across torch builds, thread counts and CPUs (torch dispatches to other kernels on an AVX-512 machine than
on an AVX2 one, and sums in another order), so each run records the environment it was measured in (torch, threads,
the CPU's kernel capability and model), and a run is compared only where that environment is this one; `--write` on
the old code records a new machine beside the others."""
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


def cpu_model() -> str:
    "The CPU's model name (Linux: /proc/cpuinfo), else what platform says."
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"): return line.split(":", 1)[1].strip()
    except OSError: pass
    return platform.processor() or "unknown"


def environment() -> dict:
    "What decides the bits of a CPU run: torch's build, threads, and the kernels this CPU gets (AVX2, AVX512, ...)."
    import torch
    return dict(torch=torch.__version__, threads=1, python=platform.python_version(), machine=platform.machine(),
                device="cpu", cpu=torch.backends.cpu.get_cpu_capability(), cpu_model=cpu_model())


COMPARED = ("torch", "threads", "machine", "device", "cpu", "cpu_model")   # the fields two environments must share


def same_environment(a: dict, b: dict) -> bool:
    return all(a.get(k) == b.get(k) for k in COMPARED)


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
                sets=run["sets"], environment=environment(), hash=digest(records), final=final, records=records)


def first_difference(old: list[dict], new: list[dict]) -> str:
    "Where two runs' records first differ, in words."
    for i, (a, b) in enumerate(zip(old, new)):
        for k in [*a, *(k for k in b if k not in a)]:       # in the order the trainer logs them
            was, now = a.get(k, "<absent>"), b.get(k, "<absent>")
            if was != now: return f"first difference at step {a.get('step', i + 1)}, {k}: recorded {was!r}, now {now!r}"
    if len(old) != len(new): return f"recorded {len(old)} records, now {len(new)}"
    return "the records are equal but the hash differs (the hashing changed)"


def as_recorded(old: list[dict], new: list[dict]) -> list[dict]:
    "The new records cut to the metrics the old ones hold: a metric logged since the record is not a changed number."
    return [{k: v for k, v in b.items() if k in a} for a, b in zip(old, new)] if len(old) == len(new) else new


def new_metrics(recorded: dict, measured: dict) -> list[str]:
    "The metrics the new run logs that the record does not hold (in no step)."
    seen = {k for r in recorded["records"] for k in r}
    return sorted({k for r in measured["records"] for k in r} - seen)


def compare(recorded: dict, measured: dict) -> str | None:
    "None when a run gives the recorded numbers (new metrics aside), else a readable line of what changed."
    if recorded["hash"] == measured["hash"]: return None
    if digest(as_recorded(recorded["records"], measured["records"])) == recorded["hash"]: return None
    old, new = recorded["records"], measured["records"]
    return f"{recorded['name']}: {first_difference(old, as_recorded(old, new))}"


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
    rec = load() if RECORD.exists() else dict(runs=[])
    here = [r for r in rec["runs"] if same_environment(r["environment"], env)]   # recorded in this environment
    if a.write:
        runs = select(all_runs(recipe_names()), a.set, a.only)
        old = {r["name"]: r for r in here}
    else:
        runs = select(here, a.set, a.only)
        if not runs:
            seen = sorted({f"{r['environment'].get('cpu')} {r['environment'].get('cpu_model')}" for r in rec["runs"]})
            print(f"no run of this set was recorded in this environment (torch {env['torch']}, {env['cpu']} "
                  f"{env['cpu_model']}; recorded: {seen}): bitwise results differ across builds and CPUs, so there is "
                  "nothing to compare (record anew with --write on the old code)")
            return 2
        old = {r["name"]: r for r in here}
    results, bad = [], []
    with tempfile.TemporaryDirectory(prefix="same-numbers-") as work:
        for run in runs:
            t0 = time.perf_counter()
            m = measure(run, Path(work))
            diff = compare(old[run["name"]], m) if run["name"] in old else "(new)"
            took = time.perf_counter() - t0
            added = new_metrics(old[run["name"]], m) if run["name"] in old and not diff else []
            note = f" (metrics logged since the record: {', '.join(added)})" if added else ""
            print(f"{run['name']:50s} {m['hash'][:16]}  {took:6.1f} s  {diff or 'same'}{note}", flush=True)
            if diff and not a.write: bad.append(diff)
            results.append(m)
    if a.write:
        new = {(m["name"], json.dumps(m["environment"], sort_keys=True)) for m in results}
        kept = [r for r in rec["runs"] if (r["name"], json.dumps(r["environment"], sort_keys=True)) not in new
                and not (r["name"] in {m["name"] for m in results} and same_environment(r["environment"], env))]
        order = {r["name"]: i for i, r in enumerate(all_runs(recipe_names()))}
        where = lambda r: (order.get(r["name"], len(order)), r["environment"]["cpu_model"])  # noqa: E731
        allruns = sorted(kept + results, key=where)
        RECORD.write_text(json.dumps(dict(time_keys=sorted(TIME_KEYS), runs=allruns), indent=1) + "\n")
        print(f"wrote {len(allruns)} runs to {RECORD.relative_to(ROOT)}")
        return 0
    if bad: print("different numbers:\n  " + "\n  ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
