"""Tests of the repository as a whole: layers, docs, packaging, layout, code rules."""
