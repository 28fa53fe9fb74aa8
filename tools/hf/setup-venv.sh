#!/usr/bin/env bash
# Makes tools/hf/.venv: Debian's python3 (with its torch and numpy) plus the
# pinned Hugging Face packages of requirements.txt, from PyPI. Does nothing when
# the venv already matches requirements.txt. Test-time only: the library and
# the CLI never run Python.
set -euo pipefail
cd "$(dirname "$0")"
venv=.venv
stamp=$venv/.requirements
if [ -f "$stamp" ] && cmp -s requirements.txt "$stamp"; then exit 0; fi
rm -rf "$venv"
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r requirements.txt
"$venv/bin/python" -c 'import torch, transformers, sentence_transformers, tokenizers, safetensors'
cp requirements.txt "$stamp"
echo "tools/hf/.venv: $("$venv/bin/python" -c 'import transformers, tokenizers; print("transformers", transformers.__version__, "tokenizers", tokenizers.__version__)')"
