"""Analysis in two parts: verdicts/ decides (rules, attribution, noise), report/ shows (render,
plots, templates, glance)."""
