"""The process around the engine: garbage-collector tuning, process locks, durations, paths."""
