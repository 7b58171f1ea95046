"""nvcre.runtime.report: projections of the verdict model.

``text`` renders NVCRE's 66-column human report, ``json`` the JSON report, ``metrics`` the gauge
samples. Each reads only ``nvcre.runtime.judge.model`` records, so they cannot disagree.
"""
