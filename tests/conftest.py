"""Fixtures shared by the tests: the tiny configs of tests/tiny_configs.json, a fresh run directory, and `rlref_cmd`,
which runs the `rlref` command in this process and returns (exit status, stdout, stderr)."""
import copy, json
from pathlib import Path
import pytest

# each file's tiny config, shared with the seed sweeps behind its margins
TINY_CONFIGS = Path(__file__).resolve().parent / "tiny_configs.json"


@pytest.fixture(scope="session")
def tiny_configs() -> dict:
    "Every tiny config by the name of the test file it belongs to (read once; use `tiny_config` for a copy to change)."
    return json.loads(TINY_CONFIGS.read_text())


@pytest.fixture
def tiny_config(tiny_configs):
    "tiny_config('test_cli') -> a fresh copy of that file's tiny config (TrainConfig fields)."
    def get(name: str) -> dict:
        if name not in tiny_configs:
            raise KeyError(f"no tiny config {name!r} in {TINY_CONFIGS.name}; there are {sorted(tiny_configs)}")
        return copy.deepcopy(tiny_configs[name])
    return get


@pytest.fixture
def run_dir(tmp_path) -> Path:
    "A run directory that does not exist yet, in this test's own temporary folder."
    return tmp_path / "run"


@pytest.fixture
def rlref_cmd(capsys):
    "rlref_cmd(argv) runs `rlref ARGV` in this process: (exit status, stdout, stderr)."
    from rlref.cli import main
    def run(argv: list[str]) -> tuple[int, str, str]:
        code = 0
        try: main(argv)
        except SystemExit as e: code = e.code
        out, err = capsys.readouterr()
        return code, out, err
    return run
