"""What every nightly job shares: the data directory's layout, the Spark session and its
worker daemon, the task map, file problems, and the report tables' schemas and writes."""
