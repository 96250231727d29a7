"""The base of the errors a user's input causes (a file, an option, a field of a
configuration), as against the system's own faults.

Principle 7 (docs/architecture.md): bad input gets a clear error and loses nothing else.
An ``InputError``'s message names the input and says why it cannot be used, on one line
(a topology's several problems one per line); the command line prints it without a
traceback and exits non-zero (``ops/cli/errors.py``). Every component raises its own
subclass, so a library caller can still tell them apart.
"""
from __future__ import annotations


class InputError(ValueError):
    """A bad input the user can fix; ``str()`` names it and the reason."""
