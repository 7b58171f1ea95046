"""Tests of ``nvcre.compiler`` (this folder mirrors compiler/)."""
