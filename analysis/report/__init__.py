"""What shows: HTML, Markdown and text renderings, plots, templates and the closing table
(glance), over what analysis.verdicts decided."""
