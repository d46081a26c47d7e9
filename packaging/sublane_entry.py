"""Entry point of the frozen build: the same `sublane` command as the console script.

`sublane serve …` runs the proxy only (no Qt is imported); with no command the tray app starts
(or the headless proxy when there is no display). Every other subcommand works too.
"""

import multiprocessing
import sys

from sublane_desktop.cli import main

if __name__ == "__main__":
    multiprocessing.freeze_support()  # harmless on Linux; required if anything spawns on Windows
    sys.exit(main())
