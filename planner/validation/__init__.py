"""The validation pipeline: the planner against measured rows (measured), leave-one-source-out scores (loso) and the
uncertainty bands drawn from them (uncertainty)."""
