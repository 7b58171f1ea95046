"""Tests of ``nvcre.runtime`` (this folder mirrors runtime/)."""
