"""Tests of ``nvcre.testing.realnodes`` (this folder mirrors testing/realnodes/)."""
