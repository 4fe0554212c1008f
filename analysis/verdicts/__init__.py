"""What decides: a run's data (run_data), the rules, attribution, noise (between_run, borderline)
and the comparison of runs. Nothing here draws or renders."""
