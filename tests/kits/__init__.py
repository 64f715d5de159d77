"""What tests and benches share, importable as `kits` (pyproject's pytest `pythonpath`
puts tests/ on the path; a bench puts it there itself): a holmd in a subprocess
(`kits.holmd`), holmd's app served in the test's own process (`kits.app`), Debian's Chromium
driven over DevTools (`kits.chromium`), test hosts to reach (`kits.net`), and the scripts of
examples/ imported by their path (`kits.examples`). Nothing here is a test, and no bench
imports a test module (tests/layout/test_test_layout.py holds both that and that no test
edits sys.path)."""
