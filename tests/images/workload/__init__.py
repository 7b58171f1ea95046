"""Tests of images/workload/ (this folder mirrors it)."""
