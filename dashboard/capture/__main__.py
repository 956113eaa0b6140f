"""`python -m dashboard.capture -- script.py`: the capture command."""

from dashboard.capture.command import capture_command

capture_command(prog_name="dashboard capture")
