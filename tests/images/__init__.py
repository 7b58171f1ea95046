"""Tests of the scripts under images/ (the folders mirror images/)."""
