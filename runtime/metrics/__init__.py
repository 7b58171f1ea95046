"""The controller's Prometheus metrics: NVCRE's families and the controller's own costs.

:mod:`.registry` holds the families and collects the verdict gauges at scrape time;
:mod:`.gauges` projects the verdict model onto gauge samples; :mod:`.jobs` counts the Job
tier's events where they happen; :mod:`.standard` serves controller-runtime's standard
families under their names; :mod:`.exposition` writes the Prometheus text family by family.
"""
