"""Tests of ``nvcre.compiler.expand`` (this folder mirrors compiler/expand/)."""
