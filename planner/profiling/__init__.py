"""Model profiling: the torch tracer behind `python -m planner profile` (tracer)."""
