#!/usr/bin/env bash
# Build the one-folder binary into dist/sublane/ with PyInstaller, in the current Python
# environment (activate the venv that has sublane-desktop installed first).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
"$PYTHON" -m pip install --quiet "pyinstaller>=6.3"
"$PYTHON" -m PyInstaller --noconfirm --clean \
    --distpath dist --workpath build/pyinstaller packaging/sublane.spec
echo "built: dist/sublane/sublane  (try: dist/sublane/sublane serve --port 0)"
