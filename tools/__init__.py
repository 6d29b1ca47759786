"""The project's utilities. Each runs as a script (`python tools/NAME.py`); tests import them as `tools.NAME` (the
repository root is on pytest's path, pyproject.toml), and no tool imports a test."""
