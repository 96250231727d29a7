"""Topology files: the schema (``schema``), reading and errors (``load``), references (``refs``)."""
