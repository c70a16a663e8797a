"""Measurements of a running deployment: import the benchmark clients' result files, refit the chip factors
and error bands on them (a calibration overlay), and compare predictions with what was measured.

``placement measure import`` (:mod:`placement.measure.importer`), ``placement calibrate``
(:mod:`placement.measure.refit`) and ``placement measure compare`` (:mod:`placement.measure.agreement`);
docs/closed-loop.md walks the loop.
"""
