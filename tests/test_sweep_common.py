"""tools/sweep_runner.run_pending, the resume rule every reader-size sweep shares: it runs only the cells missing from the log
(matching the fields given), in order, appends each record as it finishes, and with keep_going skips a failing run instead of stopping."""
import json, sys
from pathlib import Path
import pytest
from tools.sweep_runner import run_pending, finished_runs  # the repository root is on the path (pyproject.toml: pythonpath)

def test_run_pending_resumes_appends_and_skips_failures(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(dict(arm="a", seed=0, overrides={})) + "\n" + json.dumps(dict(arm="b", seed=0, overrides={"lr": 1})) + "\n")
    calls = []
    def run_one(arm, seed):
        calls.append((arm, seed))
        if arm == "bad": raise RuntimeError("boom")
        return dict(arm=arm, seed=seed, overrides={})
    cells = [("a", 0), ("b", 0), ("bad", 0), ("a", 1)]
    assert run_pending(log, ("arm", "seed"), cells, run_one, lambda r: f"ran {r['arm']}", keep_going=True, overrides={}) == 2
    assert calls == [("b", 0), ("bad", 0), ("a", 1)]                    # ("b", 0) is in the log only with other overrides
    assert finished_runs(log, ("arm", "seed"), overrides={}) == {("a", 0), ("b", 0), ("a", 1)}
    out = capsys.readouterr().out
    assert "ran b" in out and "bad 0: FAILED, skipped" in out
    before = log.read_bytes()
    assert run_pending(log, ("arm", "seed"), cells[:2] + cells[3:], run_one, overrides={}) == 0 and log.read_bytes() == before
    with pytest.raises(RuntimeError, match="boom"): run_pending(log, ("arm", "seed"), [("bad", 0)], run_one, overrides={})
