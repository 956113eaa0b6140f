"""Messages that reach a browser: one line, no server path, no Python internals.

`public_line` is what a page shows for a failure: the first line of a message the app wrote for
people (a run that does not exist, a damaged run, a bad input), with every absolute path cut to its
last part; anything else is a generic sentence. Either way an error id names the log entry that holds
the traceback (`new_error_id`): a user reports the id, an administrator finds the details.
"""

from __future__ import annotations

import re
import secrets

# An absolute path (two or more parts) not inside a URL or a word: /srv/prof/data/uploads/x/trace.json
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~-])/(?:[^\s'\"`/,;:()<>\[\]]+/)+([^\s'\"`/,;:()<>\[\]]*)")
MAX_CHARS = 300
GENERIC = "Something went wrong on the server while answering this"


def new_error_id() -> str:
    return secrets.token_hex(4)


def without_paths(text: str) -> str:
    """`text` with every absolute path replaced by its last part (a file name says enough to a user)."""
    return _ABSOLUTE_PATH.sub(lambda match: match.group(1) or "…", text)


def first_line(text: str) -> str:
    line = next((part.strip() for part in str(text).splitlines() if part.strip()), "")
    return line if len(line) <= MAX_CHARS else line[: MAX_CHARS - 1] + "…"


def public_line(message: str | None, error_id: str) -> str:
    """One line for the page: the app's own message (paths cut) or the generic sentence, and the error id."""
    shown = without_paths(first_line(message)) if message else GENERIC
    return f"{shown.rstrip('.')} (error {error_id}; the details are in the server's log)"
