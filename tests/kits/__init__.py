"""What tests and benches share, importable as `kits` (pyproject's pytest `pythonpath`
puts tests/ on the path; a bench puts it there itself): a holmd in a subprocess
(`kits.holmd`), holmd's app served in the test's own process (`kits.app`), Debian's Chromium
driven over DevTools (`kits.chromium`), and test hosts to reach (`kits.net`). Nothing here
is a test, and no bench imports a test module."""
