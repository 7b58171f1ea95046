"""Tests of ``nvcre.testing`` (this folder mirrors testing/)."""
