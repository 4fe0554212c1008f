"""The orchestrated run: the runner walking a matrix, one cell's session (target + gateway),
and the progress view."""
