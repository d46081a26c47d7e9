#!/usr/bin/env bash
# Install the desktop entry and the icon for the current user (Linux / BSD desktops).
#
#   packaging/install-desktop.sh [PATH-TO-SUBLANE]     install
#   packaging/install-desktop.sh --uninstall           remove both again
#
# PATH-TO-SUBLANE defaults to dist/sublane/sublane when a build exists, else `sublane` on PATH.
# Files go to $XDG_DATA_HOME (default ~/.local/share): applications/sublane.desktop and
# icons/hicolor/scalable/apps/sublane.svg.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DATA_HOME="${XDG_DATA_HOME:-$HOME/.local/share}"
case "$DATA_HOME" in /*) ;; *) DATA_HOME="$HOME/.local/share" ;; esac  # relative: invalid
APPS="$DATA_HOME/applications"
ICONS="$DATA_HOME/icons/hicolor/scalable/apps"

refresh_caches() {
    command -v update-desktop-database >/dev/null && update-desktop-database -q "$APPS" || true
    command -v gtk-update-icon-cache >/dev/null \
        && gtk-update-icon-cache -q -t "$DATA_HOME/icons/hicolor" || true
}

if [ "${1:-}" = "--uninstall" ]; then
    rm -f "$APPS/sublane.desktop" "$ICONS/sublane.svg"
    refresh_caches
    echo "removed $APPS/sublane.desktop and $ICONS/sublane.svg"
    exit 0
fi

if [ $# -ge 1 ]; then
    BIN="$1"
elif [ -x "$ROOT/dist/sublane/sublane" ]; then
    BIN="$ROOT/dist/sublane/sublane"
else
    BIN="$(command -v sublane || true)"
fi
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    echo "install-desktop: no sublane executable found (build it or pass its path)" >&2
    exit 1
fi
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
case "$BIN" in
    *[[:space:]\"\`\$\\]*) EXEC="\"$(printf '%s' "$BIN" | sed 's/[\\"`$]/\\\\&/g')\"" ;;
    *) EXEC="$BIN" ;;
esac

mkdir -p "$APPS" "$ICONS"
sed "s|^Exec=.*|Exec=$EXEC|" "$ROOT/sublane_desktop/resources/sublane.desktop" \
    > "$APPS/sublane.desktop.tmp"
mv "$APPS/sublane.desktop.tmp" "$APPS/sublane.desktop"
install -m 0644 "$ROOT/sublane_desktop/resources/sublane.svg" "$ICONS/sublane.svg"
refresh_caches
echo "installed $APPS/sublane.desktop (Exec=$EXEC) and $ICONS/sublane.svg"
