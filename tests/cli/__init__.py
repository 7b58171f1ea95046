"""Tests of ``nvcre.cli`` (this folder mirrors cli/)."""
