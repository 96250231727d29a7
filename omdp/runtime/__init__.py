"""The process runtime: partitions in C loops, their channels, the supervisor."""
