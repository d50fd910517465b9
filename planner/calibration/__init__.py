"""The calibration: a least-squares fit of efficiency factors to bench results (fit) and the growth laws of a traced
profile (growth)."""
