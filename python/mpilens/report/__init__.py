"""Reading profiles and presenting them: the numbers (analysis, commpattern,
comparison) and their views (terminal, html)."""
