"""The test scripts that compare with Hugging Face's code run under tools/hf/.venv's
python, where the pinned references are (transformers, tokenizers, gguf, ...)."""
import os
import sys


def run_in_hf_venv(root, name):
    """Re-executes the calling script, with its arguments, under ROOT/tools/hf/.venv's
    python, unless it runs there already; exits naming the test when the venv is missing."""
    venv = os.path.join(root, "tools", "hf", ".venv")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        sys.exit(f"{name}: the HF reference venv is missing: run `bash tools/hf/setup-venv.sh`")
    os.execv(py, [py, os.path.abspath(sys.argv[0])] + sys.argv[1:])
