"""`python -m dashboard.cli …`: the same command line as `python -m dashboard.app …`."""

from dashboard.app import main

main()
