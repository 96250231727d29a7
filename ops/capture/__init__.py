"""Tools over recorded captures: finding a capture's line files, and its statistics."""
