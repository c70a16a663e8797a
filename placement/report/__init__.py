"""The HTML plan report (``placement report PLAN --html F``): one self-contained page with inline SVG
and CSS — the fleet with the pools placed on it, cost and power by stage and chip, latency against
the SLOs, and the Pareto or sweep chart of a study when given."""

from placement.report.page import render_html

__all__ = ["render_html"]
