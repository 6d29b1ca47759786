"""Count, per file, the lines the line rules of pyproject.toml ([tool.ruff]) flag: E501 (over 120 characters), E702
(statements chained with `;`) and E703 (a trailing `;`), in rlref/ (but the generated _modidx.py), tools/ and tests/.
Not enforced yet; a ratchet: tests/test_line_rules.py fails when a file's count grows above tests/line_rules.json.

    python tools/line_rules.py            # the counts per file, and each rule's total, against the record
    python tools/line_rules.py --write    # record today's counts (after shortening lines, to lock the gain in)"""
import argparse, json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tests" / "line_rules.json"
PATHS = ("rlref", "tools", "tests")
RULES = ("E501", "E702", "E703")


def counts(root: Path = ROOT) -> dict[str, dict[str, int]]:
    "{file relative to root: {rule: count}} for every Python file ruff checks (a file with no finding counts 0)."
    base = [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", ",".join(RULES), "--exit-zero"]
    files = subprocess.run(base + ["--show-files", *PATHS], cwd=root, capture_output=True, text=True, check=True).stdout
    out = {Path(f).resolve().relative_to(root).as_posix(): dict.fromkeys(RULES, 0) for f in files.split()}
    found = subprocess.run(base + ["--output-format", "json", *PATHS], cwd=root, capture_output=True, text=True,
                           check=True)
    for v in json.loads(found.stdout):
        out[Path(v["filename"]).resolve().relative_to(root).as_posix()][v["code"]] += 1
    return {f: c for f, c in sorted(out.items()) if f.endswith(".py")}


def grown(now: dict, recorded: dict) -> list[str]:
    "A line for each file and rule whose count is above the record (a file not recorded may have none)."
    return [f"{f}: {rule} {n} lines, recorded {recorded.get(f, {}).get(rule, 0)}" for f, c in now.items()
            for rule, n in c.items() if n > recorded.get(f, {}).get(rule, 0)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help=f"record today's counts in {RECORD.relative_to(ROOT)}")
    a = ap.parse_args(argv)
    now = counts()
    if a.write:
        RECORD.write_text(json.dumps({f: c for f, c in now.items() if any(c.values())}, indent=1) + "\n")
        print(f"wrote {RECORD.relative_to(ROOT)}")
    recorded = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    for f, c in now.items():
        if any(c.values()): print(f"{f:45s} " + "  ".join(f"{r} {c[r]:4d}" for r in RULES))
    for sub in PATHS:
        lines = sum(len((ROOT / f).read_text().splitlines()) for f in now if f.startswith(sub + "/"))
        tot = {r: sum(c[r] for f, c in now.items() if f.startswith(sub + "/")) for r in RULES}
        shares = ", ".join(f"{r} {n} ({100 * n / max(lines, 1):.1f}%)" for r, n in tot.items())
        print(f"{sub}/: {lines} lines; {shares}")
    bad = grown(now, recorded)
    if bad: print("above the record:\n  " + "\n  ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
