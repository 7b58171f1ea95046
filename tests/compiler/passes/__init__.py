"""Tests of ``nvcre.compiler.passes`` (this folder mirrors compiler/passes/)."""
