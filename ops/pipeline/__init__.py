"""Pipeline assembly: the operator registry the command line and partitions use."""
