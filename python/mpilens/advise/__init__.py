"""`mpilens advise`: what to change, with a predicted gain (docs/advise.md).

netmodel.py reads (or measures) the P-LogP network model; collectives.py holds the
collective algorithms' costs and knobs; rules/ one module per finding rule;
engine.py runs the rules and ranks the findings; check.py applies the top finding
and re-runs the job (`--check`); render.py prints them.
"""
