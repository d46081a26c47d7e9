"""What only developers run: the screenshot renderer and the layout and contrast audit.

Kept out of the `sublane_desktop` package so `pip install .` does not ship them; run them from a
checkout, e.g. `python -m tools.screenshots OUTDIR`.
"""
