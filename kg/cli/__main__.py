"""`python -m kg.cli`: the same as the `kg` command."""

from kg.cli import main

main()
