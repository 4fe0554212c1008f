"""Analysis: steady state, statistics, attribution, plots, reports (xcbench.analysis)."""
