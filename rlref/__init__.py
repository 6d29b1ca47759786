__version__ = "0.1.0"

# transformers and datasets import tqdm.auto, which in a Jupyter kernel without ipywidgets warns "IProgress not found"
# and falls back to text bars. Text bars are what rlref wants (committed notebooks show them as text), so the warning
# is noise. Here, because this file runs before any rlref module imports transformers or datasets.
import warnings as _warnings
_warnings.filterwarnings("ignore", message="IProgress not found")
