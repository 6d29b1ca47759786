"""The line rules (pyproject.toml [tool.ruff]: E501 over 120 characters, E702 `;` chains, E703 a trailing `;`) as a
ratchet: no file of rlref/, tools/ or tests/ has more of them than tests/line_rules.json records, and a new file has
none. Not enforced on today's code; after shortening lines, `python tools/line_rules.py --write` locks the gain in."""
import importlib.util, json
from pathlib import Path
import pytest
from tools import line_rules

ROOT = Path(__file__).resolve().parents[1]
NEEDS_RUFF = pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed (dev extra)")


@NEEDS_RUFF
def test_no_file_has_more_long_lines_or_semicolon_chains_than_recorded():
    bad = line_rules.grown(line_rules.counts(), json.loads(line_rules.RECORD.read_text()))
    assert not bad, ("above the record (shorten the lines; or, for moved code, re-record with "
                     "`python tools/line_rules.py --write` and say so in the commit):\n  " + "\n  ".join(bad))


@NEEDS_RUFF
def test_counts_see_long_lines_and_chains_but_not_the_generated_index(tmp_path):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    for d in line_rules.PATHS: (tmp_path / d).mkdir()
    (tmp_path / "rlref" / "m.py").write_text(f"x = '{'a' * 120}'\ny = 1; z = 2\nw = 3;\nok = '{'b' * 100}'\n")
    (tmp_path / "rlref" / "_modidx.py").write_text(f"d = '{'c' * 130}'; e = 1\n")
    assert line_rules.counts(tmp_path) == {"rlref/m.py": {"E501": 1, "E702": 1, "E703": 1}}


def test_the_ratchet_fails_on_growth_and_on_a_new_file_with_findings():
    rec = {"rlref/a.py": {"E501": 2, "E702": 1, "E703": 0}}
    assert line_rules.grown({"rlref/a.py": {"E501": 2, "E702": 0, "E703": 0}}, rec) == []
    more, new = {"rlref/a.py": {"E501": 3, "E702": 1, "E703": 0}}, {"rlref/b.py": {"E501": 0, "E702": 1, "E703": 0}}
    assert line_rules.grown(more, rec) == ["rlref/a.py: E501 3 lines, recorded 2"]
    assert line_rules.grown(new, rec) == ["rlref/b.py: E702 1 lines, recorded 0"]


def test_the_rules_are_configured_and_the_generated_index_is_left_out():
    text = (ROOT / "pyproject.toml").read_text()
    assert "line-length = 120" in text and 'select = ["E501", "E702", "E703"]' in text and "rlref/_modidx.py" in text
