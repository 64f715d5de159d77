"""`python -m holm.cli`: the `holm` command, for a checkout without the console script."""

from holm.cli import main

main(prog_name="holm")
