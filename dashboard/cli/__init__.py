"""The command line: `main.py` is the click group (serving is handed in by `dashboard.app`), one module per
command family beside it (`ingest`, `exports`, `report`, `compare`, `compile_capture`); capture's commands
live with capture. `python -m dashboard.cli` is `python -m dashboard.app`."""
