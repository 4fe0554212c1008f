"""Subcommands of the xcbench CLI, one module each."""
