"""Studies: many solves of modified copies of an instance (what-if, sweep, Pareto, marginal
values, comparisons), run locally or on Ray. They return results and never print; the CLI
(:mod:`placement.cli`) renders them.
"""
